package guardrail

import (
	"regexp"
	"strings"
	"testing"
)

func TestMaxLen(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		want    int
		bounded bool
	}{
		{`sk-[A-Za-z0-9]{20,}`, 0, false},
		{`sk-[A-Za-z0-9]{20,40}`, 43, true},
		{`\d{4}-\d{4}-\d{4}-\d{4}`, 19, true},
		{`(?i)secret`, 24, true},
		{`é|ab`, 2, true},
		{`\bkey\b`, 3, true},
		{`a+`, 0, false},
		{`[^a]`, 4, true},
	} {
		n, ok := MaxLen(regexp.MustCompile(tc.pattern))
		if n != tc.want || ok != tc.bounded {
			t.Errorf("MaxLen(%q) = %d, %v; want %d, %v", tc.pattern, n, ok, tc.want, tc.bounded)
		}
	}
}

func TestWindowRefuses(t *testing.T) {
	for _, p := range []string{`a*`, `x?`, `sk-\w+`} {
		if _, err := Window(regexp.MustCompile(p), 0); err == nil {
			t.Errorf("Window(%q) took it", p)
		}
	}
	if w, err := Window(regexp.MustCompile(`sk-\w+`), 100); err != nil || w != 104 {
		t.Errorf("Window with a limit = %d, %v; want 104", w, err)
	}
}

// stream writes pieces to a holder of one redactor of pattern and returns
// what it released, piece by piece.
func stream(t testing.TB, pattern string, limit int, pieces []string) []string {
	re := regexp.MustCompile(pattern)
	w, err := Window(re, limit)
	if err != nil {
		t.Fatal(err)
	}
	h := NewHolder([]*Redactor{NewRedactor(re, "[x]", w)}, HoldNone, nil)
	var out []string
	for _, p := range pieces {
		s, _ := h.Write(p)
		out = append(out, s)
	}
	s, _ := h.Close()
	return append(out, s)
}

func TestRedactorHoldsOnlyWhatCouldMatch(t *testing.T) {
	got := stream(t, `sk-[a-z]{4,}`, 16, []string{"Hello there, s", "k-ab", "cdef and more", " text"})
	want := []string{"Hello there, ", "", "", "[x] and more", " text"}
	if strings.Join(got, "|") != strings.Join(append(want[:4:4], ""), "|") && strings.Join(got, "") != "Hello there, [x] and more text" {
		t.Fatalf("released %q", got)
	}
	if got[0] != "Hello there, " {
		t.Errorf("first release %q: text that cannot start a match is held", got[0])
	}
	if strings.Join(got, "") != "Hello there, [x] and more text" {
		t.Errorf("released %q", strings.Join(got, ""))
	}
}

func TestRedactorKeepsRunes(t *testing.T) {
	got := stream(t, `\d{3}`, 0, []string{"héllo wörld ", "123 ünïcödé", " done"})
	for _, s := range got {
		if !utf8Valid(s) {
			t.Errorf("released %q: a rune split", s)
		}
	}
	if strings.Join(got, "") != "héllo wörld [x] ünïcödé done" {
		t.Errorf("released %q", strings.Join(got, ""))
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestHolderParagraphs(t *testing.T) {
	var checked []string
	h := NewHolder(nil, HoldParagraphs, func(s string) (string, error) {
		checked = append(checked, s)
		return s, nil
	})
	a, _ := h.Write("one\n\ntw")
	b, _ := h.Write("o\n\nthree")
	c, _ := h.Close()
	if a != "one\n\n" || b != "two\n\n" || c != "three" {
		t.Errorf("released %q %q %q", a, b, c)
	}
	if len(checked) != 3 {
		t.Errorf("checked %q", checked)
	}
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		answer  string
		block   bool
		failing bool
	}{
		{"yes", false, false}, {" No.", true, false}, {"\"YES\"", false, false},
		{"yes, it is", true, true}, {"", true, true}, {"maybe", true, true},
	} {
		block, err := Verdict(tc.answer, "no", "yes")
		if block != tc.block || (err != nil) != tc.failing {
			t.Errorf("Verdict(%q) = %v, %v", tc.answer, block, err)
		}
		if err != nil && strings.Contains(err.Error(), tc.answer) && tc.answer != "" {
			t.Errorf("the error quotes the answer: %v", err)
		}
	}
}
