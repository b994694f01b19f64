package httpapi

import (
	"log/slog"
	"maps"
	"slices"
)

// DefaultMaxRequestBytes bounds a request's body when an endpoint's options
// leave it 0. Each endpoint exports it under its own name.
const DefaultMaxRequestBytes = 8 << 20

// DefaultMaxMessages bounds a request's messages when an endpoint's options
// leave it 0. Each endpoint exports it under its own name.
const DefaultMaxMessages = 10_000

// Shared points at the fields that every endpoint's Options holds. An
// endpoint's New fills them in place with [Shared.Fill]. Its handlers then
// read one copy of the options, defaults included.
type Shared struct {
	Tokens          *map[string]string
	CORSOrigins     *[]string
	MaxRequestBytes *int64
	MaxMessages     *int
	Logger          **slog.Logger
}

// Fill gives each field left zero (or negative) its default. It copies the
// tokens and origins, so a caller's later change does not reach the
// endpoint. It returns the guard of those tokens and origins.
func (s Shared) Fill() *Guard {
	if *s.MaxRequestBytes <= 0 {
		*s.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if *s.MaxMessages <= 0 {
		*s.MaxMessages = DefaultMaxMessages
	}
	if *s.Logger == nil {
		*s.Logger = slog.New(slog.DiscardHandler)
	}
	*s.Tokens, *s.CORSOrigins = maps.Clone(*s.Tokens), slices.Clone(*s.CORSOrigins)
	return NewGuard(*s.Tokens, *s.CORSOrigins)
}
