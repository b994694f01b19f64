package guardrail

import (
	"regexp"
	"strings"
	"testing"
)

// The patterns the fuzz target redacts: a bounded one, one whose bound is
// set, one case-folded, one with assertions.
var fuzzPatterns = []struct {
	re    *regexp.Regexp
	limit int
}{
	{regexp.MustCompile(`sk-[A-Za-z0-9]{20,}`), 256},
	{regexp.MustCompile(`\d{4}-\d{4}-\d{4}-\d{4}`), 0},
	{regexp.MustCompile(`(?i)password: ?\S{6,24}`), 0},
	{regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`), 0},
}

// FuzzRedactSplit streams a text holding a secret, cut anywhere into three
// pieces, through a redactor. What it releases, piece by piece, must be
// the whole text's redaction: no character of a secret leaks, and nothing
// else is lost.
func FuzzRedactSplit(f *testing.F) {
	f.Add(uint8(0), "Here is the key: ", "sk-abcdefghijklmnopqrstuvwxyz0123", " keep it safe.", uint16(20), uint16(25))
	f.Add(uint8(1), "card ", "4111-1111-1111-1111", "", uint16(7), uint16(8))
	f.Add(uint8(2), "my PassWord: ", "hunter22xx", "\nbye", uint16(3), uint16(14))
	f.Add(uint8(3), "id AKIA", "AKIAABCDEFGHIJKLMNOP", "x", uint16(9), uint16(30))
	f.Add(uint8(0), "ssk-sk-", "sk-AAAAAAAAAAAAAAAAAAAAAAAA", "sk-", uint16(1), uint16(2))
	f.Fuzz(func(t *testing.T, which uint8, before, secret, after string, i, j uint16) {
		p := fuzzPatterns[int(which)%len(fuzzPatterns)]
		text := before + secret + after
		if len(text) > 4096 {
			return
		}
		want := p.re.ReplaceAllString(text, "[x]")
		for _, m := range p.re.FindAllStringIndex(text, -1) {
			if m[1]-m[0] > p.limit && p.limit > 0 {
				return // past the set bound, a match is cut: not the whole text's
			}
		}
		a, b := int(i)%(len(text)+1), int(j)%(len(text)+1)
		a, b = min(a, b), max(a, b)
		w, err := Window(p.re, p.limit)
		if err != nil {
			t.Fatal(err)
		}
		h := NewHolder([]*Redactor{NewRedactor(p.re, "[x]", w)}, HoldNone, nil)
		var got strings.Builder
		for _, piece := range []string{text[:a], text[a:b], text[b:]} {
			s, _ := h.Write(piece)
			got.WriteString(s)
			if !strings.HasPrefix(want, got.String()) {
				t.Fatalf("%q cut at %d, %d: released %q, which the redaction %q does not begin with", text, a, b, got.String(), want)
			}
		}
		s, _ := h.Close()
		got.WriteString(s)
		if got.String() != want {
			t.Fatalf("%q cut at %d, %d: released %q, want %q", text, a, b, got.String(), want)
		}
	})
}
