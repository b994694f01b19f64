package jsonstream

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnquoteBytesKeepsWhatAStrictDecoderReplaces(t *testing.T) {
	for _, tc := range []struct{ lit, want string }{
		{`""`, ""},
		{`"plain"`, "plain"},
		{`"tab\tquote\"slash\/back\\"`, "tab\tquote\"slash/back\\"},
		{`"\u00e9\u6771"`, "é東"},
		{`"\uD83C\uDF0D"`, "🌍"},
		{`"\uD83C"`, "\xed\xa0\xbc"},                   // a lone high surrogate, kept as its three bytes
		{`"\uDF0D"`, "\xed\xbc\x8d"},                   // a lone low surrogate
		{`"\uDF0D\uD83C"`, "\xed\xbc\x8d\xed\xa0\xbc"}, // in the wrong order: two halves
		{"\"Z\xc3\"", "Z\xc3"},                         // invalid UTF-8 as it came
	} {
		got, err := Unquote([]byte(tc.lit))
		require.NoError(t, err, tc.lit)
		assert.Equal(t, tc.want, got, tc.lit)
	}
	for _, bad := range []string{``, `"`, `x`, `"\"`, `"\u12"`, `"\q"`} {
		_, err := Unquote([]byte(bad))
		assert.Error(t, err, bad)
	}
}

func TestWellFormed(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ok é 🌍", "ok é 🌍"},
		{"\xed\xa0\xbc\xed\xbc\x8d", "🌍"},            // two halves that met
		{"a\xed\xa0\xbcb", "a\uFFFDb"},               // a lone half
		{"\xed\xbc\x8d\xed\xa0\xbc", "\uFFFD\uFFFD"}, // halves in the wrong order
		{"Z\xc3", "Z\uFFFD"},                         // a character cut and never finished
		{"\uFFFD", "\uFFFD"},                         // a real U+FFFD stays one
	} {
		assert.Equal(t, tc.want, WellFormed([]byte(tc.in)), "%q", tc.in)
	}
}
