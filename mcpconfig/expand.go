package mcpconfig

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/robby-go/robby/internal/envvar"
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

// expandVars replaces the variables in s: see [envvar.Expand].
func expandVars(s string, values *[]string) (string, error) { return envvar.Expand(s, values) }
