package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestOneLineKeepsCharactersWhole(t *testing.T) {
	for n := 1; n < 12; n++ {
		got := oneLine("Grüße\n  aus  Köln", n)
		assert.True(t, utf8.ValidString(got), "n=%d: %q", n, got)
		assert.NotContains(t, got, "\n")
		assert.LessOrEqual(t, len(strings.TrimSuffix(got, "…")), n)
	}
	assert.Equal(t, "Grüße aus Köln", oneLine("Grüße\n  aus  Köln", 40))
}
