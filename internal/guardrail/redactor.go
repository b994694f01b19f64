package guardrail

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"slices"
	"unicode/utf8"
)

// A Redactor replaces the matches of one pattern in a text that arrives in
// pieces. It releases text only once no match can still cover it: it holds
// back the last Window bytes, from the first place a match could start
// (after the pattern's literal prefix, if it has one). Text is released at
// rune boundaries. A Redactor is not safe for concurrent use.
type Redactor struct {
	re          *regexp.Regexp
	replacement string
	window      int
	prefix      []byte          // the literal every match begins with, if any
	after       func(byte) bool // where text may be cut, for the pattern's assertions; nil: anywhere
	pending     []byte          // text not released yet
	count       int
}

// NewRedactor returns a redactor of re's matches, each replaced by
// replacement, that holds back window bytes (see [Window]).
func NewRedactor(re *regexp.Regexp, replacement string, window int) *Redactor {
	prefix, _ := re.LiteralPrefix()
	return &Redactor{re: re, replacement: replacement, window: window, prefix: []byte(prefix), after: cutRule(re)}
}

// Count returns how many matches it replaced so far.
func (r *Redactor) Count() int { return r.count }

// Write takes the next piece of text and appends to out what is released.
// Each call costs time in proportion to the text held and the piece, both
// bounded by the window but for a match still growing.
func (r *Redactor) Write(out, text []byte) []byte {
	r.pending = append(r.pending, text...)
	return r.release(out, false)
}

// Flush appends to out the rest of the text, redacted: the text has ended.
func (r *Redactor) Flush(out []byte) []byte {
	return r.release(out, true)
}

// release appends to out the text that is settled, its matches replaced,
// and keeps the rest. A match is settled once the window after its start
// has arrived: more text can change neither whether it matches nor where
// it ends. So is a match still growing past the window (a pattern without
// a bound): it is cut there, and matching goes on after it.
func (r *Redactor) release(out []byte, final bool) []byte {
	p := r.pending
	n := len(p)
	ms := r.re.FindAllIndex(p, -1)
	c := n
	if !final {
		c = r.candidate(p, max(0, n-r.window))
		for _, m := range ms {
			if m[1] > m[0] && m[0]+r.window >= n {
				c = min(c, m[0])
				break
			}
		}
		c = r.cut(p, ms, c)
	}
	cursor := 0
	for _, m := range ms {
		s, e := m[0], m[1]
		if e > c {
			break
		}
		if e == s {
			continue // an assertion's empty match replaces nothing
		}
		out = append(out, p[cursor:s]...)
		out = append(out, r.replacement...)
		cursor = e
		r.count++
	}
	out = append(out, p[cursor:c]...)
	r.pending = append(r.pending[:0], p[c:]...)
	return out
}

// cut returns the last place at or before c where the text held may be
// cut: at a rune's start, not inside a match, and where the pattern's
// assertions read the rest as they would the whole (after a byte that is
// not a word's, for \b; after a line's end, for (?m)^). It gives up the
// assertions' rule past two windows, so that what it holds stays bounded.
func (r *Redactor) cut(p []byte, ms [][]int, c int) int {
	floor := len(p) - 2*r.window
	for c > 0 {
		if i := slices.IndexFunc(ms, func(m []int) bool { return m[0] < c && c < m[1] }); i >= 0 {
			c = ms[i][0]
			continue
		}
		if c < len(p) && !utf8.RuneStart(p[c]) || r.after != nil && c > floor && !r.after(p[c-1]) {
			c--
			continue
		}
		return c
	}
	return 0
}

// candidate returns the first place from from on where a match could
// start, given the pattern's literal prefix, or len(p) if none.
func (r *Redactor) candidate(p []byte, from int) int {
	if len(r.prefix) == 0 {
		return from
	}
	for i := from; i < len(p); i++ {
		rest := p[i:]
		if bytes.HasPrefix(rest, r.prefix) || len(rest) < len(r.prefix) && bytes.HasPrefix(r.prefix, rest) {
			return i
		}
	}
	return len(p)
}

// cutRule returns, for a pattern with assertions that read the byte before
// a match, which bytes the text held may begin after. It returns nil for a
// pattern without them.
func cutRule(re *regexp.Regexp) func(byte) bool {
	t, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return nil
	}
	var word, line bool
	walk(t, func(t *syntax.Regexp) {
		word = word || t.Op == syntax.OpWordBoundary || t.Op == syntax.OpNoWordBoundary
		line = line || t.Op == syntax.OpBeginLine
	})
	switch {
	case line:
		return func(b byte) bool { return b == '\n' }
	case word:
		return func(b byte) bool { return !syntax.IsWordChar(rune(b)) }
	}
	return nil
}

// AnchorsStart reports whether re has \A or ^ outside (?m): it matches at
// the start of the text only, which a stream's window is not.
func AnchorsStart(re *regexp.Regexp) bool {
	t, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return false
	}
	found := false
	walk(t, func(t *syntax.Regexp) { found = found || t.Op == syntax.OpBeginText })
	return found
}

func walk(t *syntax.Regexp, f func(*syntax.Regexp)) {
	f(t)
	for _, s := range t.Sub {
		walk(s, f)
	}
}
