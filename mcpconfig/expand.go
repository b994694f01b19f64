package mcpconfig

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// expand replaces the variables in the entry's strings.
func (e *entry) expand() error {
	for _, f := range []struct {
		s     *string
		where string
	}{{&e.command, `"command"`}, {&e.url, `"url"`}, {&e.cwd, `"cwd"`}} {
		if err := e.expandField(f.s, f.where); err != nil {
			return err
		}
	}
	for i := range e.args {
		if err := e.expandField(&e.args[i], fmt.Sprintf(`"args"[%d]`, i)); err != nil {
			return err
		}
	}
	if err := e.expandMap(e.env, "env"); err != nil {
		return err
	}
	if err := e.expandMap(e.headers, "headers"); err != nil {
		return err
	}
	return checkHeaderValues(e.headers)
}

// expandField replaces the variables in *s, saying where they were, and
// keeps their values as secrets.
func (e *entry) expandField(s *string, where string) error {
	v, err := expandVars(*s, &e.secrets)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	*s = v
	return nil
}

// expandMap replaces the variables in the values of m, in key order.
func (e *entry) expandMap(m map[string]string, name string) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if err := e.expandField(&v, fmt.Sprintf("%q %q", name, k)); err != nil {
			return err
		}
		m[k] = v
	}
	return nil
}

// checkHeaderValues rejects values that would split a header. The HTTP client
// would refuse them only when connecting.
func checkHeaderValues(h map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if strings.ContainsAny(h[k], "\r\n\x00") {
			return fmt.Errorf(`"headers" %q: value has a line break or NUL`, k)
		}
	}
	return nil
}

// expandVars replaces ${VAR}, ${env:VAR} and ${VAR:-default} with the
// environment's values. It appends to values each one the environment gave: a
// default written in the file is no secret. Unlike [os.ExpandEnv], it leaves
// $VAR and a lone $ alone. It fails on a variable that is not set.
func expandVars(s string, values *[]string) (string, error) {
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
		v, fromEnv, err := lookupVar(s[i+2 : i+j])
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

// lookupVar returns the value of a variable reference (the text between ${ and
// }). It also tells whether the environment gave it.
func lookupVar(ref string) (v string, fromEnv bool, err error) {
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
