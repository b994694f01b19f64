package robby

import (
	"log/slog"
	"net/url"
	"slices"
	"strings"

	"github.com/robby-go/robby/internal/redact"
)

// secrets are the values an agent was given that must not show in its
// errors or logs. They are the API keys (its own and its fallbacks'), MCP
// servers' header values, the environment variables given to their
// subprocesses and the values marked with WithSecrets. Providers and
// servers echo them back more often than one would think. They show in an
// error about a bad key, in a server's start-up output, in a URL quoted by
// a dial error. [New] computes them once.
type secrets []string

// minSecret is the length below which a value is not taken for a secret.
// Redacting "1" or "true" everywhere would garble every message.
const minSecret = 8

func secretsOf(cfg *config) secrets {
	var s secrets
	add := func(v string) {
		v = strings.TrimSpace(strings.TrimPrefix(v, "Bearer "))
		if len(v) < minSecret {
			return
		}
		// As a URL quotes it, too.
		for _, form := range []string{v, url.QueryEscape(v), url.PathEscape(v)} {
			if !slices.Contains(s, form) {
				s = append(s, form)
			}
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
		for _, v := range srv.secrets {
			add(v)
		}
	}
	return s
}

// redact replaces every secret in text.
func (s secrets) redact(text string) string { return redact.Text(text, s) }

// wrap returns err with the secrets removed from its text. errors.Is and
// errors.As still see what it wraps.
func (s secrets) wrap(err error) error { return redact.Error(err, s) }

// logger returns l, its records redacted when there are secrets.
func (s secrets) logger(l *slog.Logger) *slog.Logger {
	if len(s) == 0 {
		return l
	}
	return redact.Logger(l, func() []string { return s })
}
