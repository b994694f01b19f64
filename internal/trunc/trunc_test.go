package trunc

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestCutNeverSplitsACharacter(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"héllo", 2, "h"}, // é is 2 bytes: cutting at 2 would split it
		{"héllo", 3, "hé"},
		{"日本", 4, "日"},
		{"日本", 2, ""},
		{"x", 0, ""},
		{"x", -1, ""},
	}
	for _, tt := range tests {
		got := Cut(tt.s, tt.n)
		assert.Equal(t, tt.want, got, "Cut(%q, %d)", tt.s, tt.n)
		assert.True(t, utf8.ValidString(got))
	}
	assert.Equal(t, "h…", Excerpt("héllo", 2))
	assert.Equal(t, "héllo", Excerpt("héllo", 6))
}
