package robby

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
)

// secrets are the values an agent was given that must not show in its
// errors or logs: the API keys (its own and its fallbacks'), MCP servers' header values, the
// environment variables given to their subprocesses and the values marked
// with WithSecrets. Providers and servers echo them back more often than
// one would think: in an error about a bad key, in a server's start-up
// output, in a URL quoted by a dial error. [New] computes them once.
type secrets []string

// minSecret is the length below which a value is not taken for a secret:
// redacting "1" or "true" everywhere would garble every message.
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

// logger returns l, its records redacted when there are secrets.
func (s secrets) logger(l *slog.Logger) *slog.Logger {
	if len(s) == 0 {
		return l
	}
	return slog.New(redactHandler{l.Handler(), s})
}

// redactHandler removes the secrets from the message and the attributes
// of every record before its next handler sees it.
type redactHandler struct {
	next slog.Handler
	s    secrets
}

func (h redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h redactHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.s.redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.s.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.s.attr(a)
	}
	return redactHandler{h.next.WithAttrs(clean), h.s}
}

func (h redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{h.next.WithGroup(name), h.s}
}

// attr returns a with the secrets removed from its value.
func (s secrets) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, s.redact(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]any, len(group))
		for i, g := range group {
			clean[i] = s.attr(g)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.Any(a.Key, s.wrap(err))
		}
		text := fmt.Sprint(v.Any())
		if clean := s.redact(text); clean != text {
			return slog.String(a.Key, clean)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
