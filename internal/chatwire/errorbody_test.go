package chatwire

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// FuzzProviderMessage reads the message of an error body, whatever its
// shape: it must be valid UTF-8, within MaxMessage bytes and an ellipsis.
func FuzzProviderMessage(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		m := ProviderMessage(body)
		require.True(t, utf8.ValidString(m), "not valid UTF-8: %q", m)
		require.LessOrEqual(t, len(m), MaxMessage+len("…"), "%q", m)
		require.Equal(t, strings.TrimSpace(m), m, "message not trimmed: %q", m)
	})
}
