// Package redact removes secrets from texts, errors and log records. Servers
// echo tokens and keys back in their errors more often than one would think. A
// token endpoint may quote the refresh token it refused.
package redact

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
)

// Min is the length below which a value is not taken for a secret. Redacting
// "1" or "true" everywhere would garble every message.
const Min = 8

// Mark replaces a secret.
const Mark = "[redacted]"

// Forms returns v as it may appear in a text: as is, and quoted in a URL's
// query or path (a form body). It returns nothing for a value shorter than
// [Min].
func Forms(v string) []string {
	v = strings.TrimSpace(strings.TrimPrefix(v, "Bearer "))
	if len(v) < Min {
		return nil
	}
	forms := []string{v}
	for _, f := range []string{url.QueryEscape(v), url.PathEscape(v)} {
		if f != forms[len(forms)-1] && f != v {
			forms = append(forms, f)
		}
	}
	return forms
}

// Text returns text with every secret replaced by [Mark].
func Text(text string, secrets []string) string {
	for _, v := range secrets {
		if v != "" {
			text = strings.ReplaceAll(text, v, Mark)
		}
	}
	return text
}

// Error returns err with the secrets removed from its text. errors.Is and
// errors.As still see what it wraps. An error without a secret is returned as
// it is.
func Error(err error, secrets []string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	msg := err.Error()
	if clean := Text(msg, secrets); clean != msg {
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

// Logger returns a logger that removes secrets from each record, before l's
// handler sees it. They are the secrets that secrets returns at that moment:
// they may change, as tokens do when refreshed. secrets must not log.
func Logger(l *slog.Logger, secrets func() []string) *slog.Logger {
	return slog.New(handler{l.Handler(), secrets})
}

// handler removes the secrets from the message and the attributes of
// every record.
type handler struct {
	next    slog.Handler
	secrets func() []string
}

func (h handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	s := h.secrets()
	out := slog.NewRecord(r.Time, r.Level, Text(r.Message, s), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(a, s))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs redacts attrs with the secrets of now. Attributes given once, such
// as a server's name, hold none that appear later.
func (h handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	s := h.secrets()
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = attr(a, s)
	}
	return handler{h.next.WithAttrs(clean), h.secrets}
}

func (h handler) WithGroup(name string) slog.Handler {
	return handler{h.next.WithGroup(name), h.secrets}
}

// attr returns a with the secrets removed from its value.
func attr(a slog.Attr, secrets []string) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Text(v.String(), secrets))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]any, len(group))
		for i, g := range group {
			clean[i] = attr(g, secrets)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.Any(a.Key, Error(err, secrets))
		}
		text := fmt.Sprint(v.Any())
		if clean := Text(text, secrets); clean != text {
			return slog.String(a.Key, clean)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
