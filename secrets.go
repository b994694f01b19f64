package robby

import (
	"slices"
	"strings"
)

// secrets are the values an agent was given that must not show in its
// errors or logs: the API keys (its own and its fallbacks'), MCP servers' header values and the
// environment variables given to their subprocesses. Providers and
// servers echo them back more often than one would think: in an error
// about a bad key, in a server's start-up output.
type secrets []string

// minSecret is the length below which a value is not taken for a secret:
// redacting "1" or "true" everywhere would garble every message.
const minSecret = 8

func secretsOf(cfg *config) secrets {
	var s secrets
	add := func(v string) {
		v = strings.TrimSpace(strings.TrimPrefix(v, "Bearer "))
		if len(v) >= minSecret && !slices.Contains(s, v) {
			s = append(s, v)
		}
	}
	if cfg.apiKey != nil {
		add(*cfg.apiKey)
	}
	for _, f := range cfg.fallbacks {
		add(f.APIKey)
	}
	for _, srv := range cfg.mcp {
		for _, vs := range srv.header {
			for _, v := range vs {
				add(v)
			}
		}
		for _, kv := range srv.env {
			_, v, _ := strings.Cut(kv, "=")
			add(v)
		}
	}
	return s
}

// redact replaces every secret in text.
func (s secrets) redact(text string) string {
	for _, v := range s {
		text = strings.ReplaceAll(text, v, "[redacted]")
	}
	return text
}

// wrap returns err with the secrets removed from its text; errors.Is and
// errors.As still see what it wraps.
func (s secrets) wrap(err error) error {
	if err == nil || len(s) == 0 {
		return err
	}
	msg := err.Error()
	if clean := s.redact(msg); clean != msg {
		return &redactedError{msg: clean, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
