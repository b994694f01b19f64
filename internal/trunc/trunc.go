// Package trunc cuts text to a size in bytes without splitting a UTF-8
// character. Tool outputs, error messages, progress notes and terminal lines
// all need the same care.
package trunc

import "unicode/utf8"

// Cut returns the longest prefix of s of at most n bytes. It never ends inside
// a character.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Excerpt is [Cut] with "…" added when s was cut.
func Excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Cut(s, n) + "…"
}
