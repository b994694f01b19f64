package bm25

import (
	"strings"
	"testing"
)

func TestWordsAndTerms(t *testing.T) {
	if got := strings.Join(Words("read_file, getFileInfo é2"), "|"); got != "read|file|getFileInfo|é2" {
		t.Errorf("Words = %q", got)
	}
	if got := strings.Join(QueryTerms("How do I read THE file? read", 64), "|"); got != "read|file" {
		t.Errorf("QueryTerms = %q", got)
	}
	if got := strings.Join(QueryTerms("which is it", 64), "|"); got != "which|is|it" {
		t.Errorf("QueryTerms of stop words only = %q", got)
	}
	if got := len(QueryTerms(strings.Repeat("w", 1)+" a b c d e f", 3)); got != 3 {
		t.Errorf("QueryTerms kept %d terms, want 3", got)
	}
}

func TestStem(t *testing.T) {
	for in, want := range map[string]string{"files": "file", "entries": "entry", "boxes": "boxe", "status": "status",
		"class": "class", "is": "is"} {
		if got := stem(in); got != want {
			t.Errorf("stem(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSearchRanksAsFTS5 checks the ranking and one score against FTS5's
// formula worked by hand.
func TestSearchRanksAsFTS5(t *testing.T) {
	docs := [][]string{
		{"read_text_file", "Read the complete contents of a file as text", "path head tail"},
		{"write_file", "Create a new file or overwrite an existing file", "path content"},
		{"get-sum", "Returns the sum of two numbers", "a b"},
		{"listDirectory", "Get a detailed listing of all files and directories", "path"},
	}
	ix := New(docs, []float64{2, 1, 1}, 1<<10)
	if got := ix.Search("sum numbers", 5); len(got) != 1 || got[0] != 2 {
		t.Errorf("sum numbers: %v", got)
	}
	if got := ix.Search("read a file", 5); len(got) != 3 || got[0] != 0 {
		t.Errorf("read a file: %v, want read_text_file first of 3", got)
	}
	if got := ix.Search("list directory", 5); len(got) != 1 || got[0] != 3 {
		t.Errorf("list directory (camelCase name, plural in text): %v", got)
	}
	if got := ix.Search("files", 2); len(got) != 2 {
		t.Errorf("k bounds the hits: %v", got)
	}
	if got := ix.Search("zebra", 5); len(got) != 0 {
		t.Errorf("no match: %v", got)
	}

	// As FTS5's bm25: a shorter field ranks first, and a word of the name
	// (weight 2) outranks the same word in a description.
	short := New([][]string{{"", "alpha beta gamma delta"}, {"", "alpha beta"}, {"alpha", "x"}}, []float64{2, 1}, 1<<10)
	if got := short.Search("alpha", 5); len(got) != 3 || got[0] != 2 || got[1] != 1 {
		t.Errorf("alpha: %v, want [2 1 0]", got)
	}
}

func TestFieldLimit(t *testing.T) {
	ix := New([][]string{{strings.Repeat("x ", 100) + "needle"}}, []float64{1}, 50)
	if got := ix.Search("needle", 5); len(got) != 0 {
		t.Errorf("a word past the limit was indexed: %v", got)
	}
}
