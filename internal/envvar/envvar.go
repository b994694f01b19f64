// Package envvar expands the ${VAR} references of configuration files, so
// that secrets stay in the environment and out of the files.
package envvar

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Expand replaces ${VAR}, ${env:VAR} and ${VAR:-default} with the
// environment's values. It appends to values each one the environment gave: a
// default written in the file is no secret. Unlike [os.ExpandEnv], it leaves
// $VAR and a lone $ alone. It fails on a variable that is not set. Its errors
// name variables, never their values.
func Expand(s string, values *[]string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", errors.New("unterminated ${") // the value may be a secret
		}
		v, fromEnv, err := lookup(s[i+2 : i+j])
		if err != nil {
			return "", err
		}
		if fromEnv && !slices.Contains(*values, v) {
			*values = append(*values, v)
		}
		b.WriteString(s[:i])
		b.WriteString(v)
		s = s[i+j+1:]
	}
}

// lookup returns the value of a variable reference (the text between ${ and
// }). It also tells whether the environment gave it.
func lookup(ref string) (v string, fromEnv bool, err error) {
	if strings.HasPrefix(ref, "input:") {
		return "", false, fmt.Errorf("${%s}: VS Code inputs are not supported: use ${env:NAME}", ref)
	}
	name, def, hasDef := strings.Cut(strings.TrimPrefix(ref, "env:"), ":-")
	if name == "" {
		return "", false, fmt.Errorf("${%s}: no variable name", ref)
	}
	if v, ok := os.LookupEnv(name); ok && (v != "" || !hasDef) {
		return v, true, nil
	}
	if hasDef {
		return def, false, nil
	}
	return "", false, fmt.Errorf("environment variable %s is not set", name)
}
