// Package guardrail holds the mechanics of the agent's guards: the bound of
// a pattern's matches, the redaction of a stream whose text arrives in
// pieces, and the strict reading of a judge's answer.
package guardrail

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"
)

// MaxLen returns the most bytes a match of re can span, and false if its
// matches have no bound (a *, + or {n,} repeat).
func MaxLen(re *regexp.Regexp) (int, bool) {
	t, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return 0, false // compiled already: it parses
	}
	return maxLen(t.Simplify())
}

// maxLen is MaxLen of a parsed pattern. A rune counts its longest UTF-8
// form; a case-folded literal counts four bytes a rune, its folds' longest.
func maxLen(t *syntax.Regexp) (int, bool) {
	switch t.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range t.Rune {
			if t.Flags&syntax.FoldCase != 0 {
				n += utf8.UTFMax
			} else {
				n += runeLen(r)
			}
		}
		return n, true
	case syntax.OpCharClass:
		if len(t.Rune) == 0 {
			return 0, true
		}
		return runeLen(t.Rune[len(t.Rune)-1]), true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax, true
	case syntax.OpCapture, syntax.OpQuest:
		return maxLen(t.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		return 0, false
	case syntax.OpRepeat:
		n, ok := maxLen(t.Sub[0])
		if !ok || t.Max < 0 {
			return 0, false
		}
		return n * t.Max, true
	case syntax.OpConcat, syntax.OpAlternate:
		total := 0
		for _, s := range t.Sub {
			n, ok := maxLen(s)
			if !ok {
				return 0, false
			}
			if t.Op == syntax.OpConcat {
				total += n
			} else {
				total = max(total, n)
			}
		}
		return total, true
	default: // empty-width assertions and the empty match
		return 0, true
	}
}

// runeLen is the UTF-8 length of r; an invalid rune (a byte of invalid
// UTF-8 matches as one) counts its replacement's.
func runeLen(r rune) int {
	if n := utf8.RuneLen(r); n > 0 {
		return n
	}
	return utf8.UTFMax
}

// Window returns how many bytes a redactor of re holds back: its longest
// match, or limit for a pattern whose matches have no bound, and one rune
// more, which an assertion such as \b or $ looks at.
func Window(re *regexp.Regexp, limit int) (int, error) {
	if re.MatchString("") {
		return 0, fmt.Errorf("pattern %q matches the empty text", re)
	}
	n, ok := MaxLen(re)
	if !ok {
		if limit <= 0 {
			return 0, fmt.Errorf("pattern %q has no bound on its matches' length: give it one", re)
		}
		n = limit
	}
	return n + utf8.UTFMax, nil
}
