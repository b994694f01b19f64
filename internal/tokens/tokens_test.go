package tokens

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// counts are a real tokenizer's counts of the texts under testdata, made by
// testdata/count.js with the npm package gpt-tokenizer 3.4.0:
//
//	npm install gpt-tokenizer@3.4.0
//	node count.js english.txt code.txt chinese.txt json.txt > counts.json
type counts map[string]map[string]struct {
	Text       int   `json:"text"`
	Paragraphs []int `json:"paragraphs"`
}

func readCounts(t *testing.T) counts {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "counts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c counts
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// bounds are the estimate's error on each text, as a fraction of the real
// count: the figures docs/CONTEXT.md gives.
var bounds = map[string]struct{ lo, hi float64 }{
	"english.txt": {0, 0.12},
	"code.txt":    {0, 0.12},
	"chinese.txt": {-0.05, 0.50},
	"json.txt":    {0, 0.20},
}

func TestEstimateAgainstRealTokenizers(t *testing.T) {
	c := readCounts(t)
	for file, byEncoding := range c {
		b, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		paras := splitParagraphs(text)
		for enc, n := range byEncoding {
			est := String(text)
			e := float64(est-n.Text) / float64(n.Text)
			t.Logf("%-12s %-12s real %5d estimate %5d error %+5.1f%%", file, enc, n.Text, est, 100*e)
			bd := bounds[file]
			if e < bd.lo || e > bd.hi {
				t.Errorf("%s in %s: estimate %d for %d tokens, error %+.1f%% outside [%+.0f%%, %+.0f%%]",
					file, enc, est, n.Text, 100*e, 100*bd.lo, 100*bd.hi)
			}
			if len(paras) != len(n.Paragraphs) {
				t.Fatalf("%s: %d paragraphs, counts has %d", file, len(paras), len(n.Paragraphs))
			}
			worst := 0.0
			for i, p := range paras {
				if n.Paragraphs[i] < 20 {
					continue // a heading: a token more or less is a large fraction
				}
				e := float64(String(p)-n.Paragraphs[i]) / float64(n.Paragraphs[i])
				if e < worst {
					worst = e
				}
			}
			t.Logf("%-12s %-12s worst underestimate of a paragraph: %+.1f%%", file, enc, 100*worst)
		}
	}
}

// splitParagraphs splits text as count.js does.
func splitParagraphs(text string) []string {
	var out []string
	for _, p := range strings.Split(text, "\n\n") {
		if strings.TrimSpace(p) != "" {
			out = append(out, p)
		}
	}
	return out
}

// A message's JSON costs its text and a few tokens more: the escapes count
// as the characters they stand for.
func TestJSONEscapes(t *testing.T) {
	text := "line one\nline two\t\"quoted\" \\ path"
	raw, err := json.Marshal(map[string]string{"role": "user", "content": text})
	if err != nil {
		t.Fatal(err)
	}
	if got, plain := Count(raw), String(text); got < plain || got > plain+12 {
		t.Errorf("JSON estimate %d, text estimate %d: want the text's and a few tokens more", got, plain)
	}
}

func TestEmpty(t *testing.T) {
	if n := Count(nil); n != 0 {
		t.Errorf("Count(nil) = %d", n)
	}
}

func BenchmarkCount(b *testing.B) {
	text, err := os.ReadFile(filepath.Join("testdata", "english.txt"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Count(text)
	}
}

// Any bytes are counted, at most one token a byte: a truncated escape or
// UTF-8 sequence included.
func FuzzCount(f *testing.F) {
	for _, s := range []string{"", "hello world", `{"content":"a\nb\u00e9"}`, "中文", `\`, `\u12`, "\xff\xfe", "   \n\t"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if n := Count(b); n < 0 || n > len(b) {
			t.Fatalf("Count(%q) = %d", b, n)
		}
	})
}
