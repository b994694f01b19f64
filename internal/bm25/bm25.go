// Package bm25 ranks short documents against a free-text query by BM25, as
// SQLite FTS5's bm25() ranks the knowledge base's passages: the same
// formula (k1 = 1.2, b = 0.75, the columns' term counts weighted before
// saturation), the same splitting of a query into words and the same stop
// words. The knowledge base runs it inside SQLite over its stored index.
// An agent's tool search ranks a few hundred tool descriptions in memory,
// where a database would cost more than the ranking.
package bm25

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode"
)

// FTS5's constants.
const (
	k1 = 1.2
	b  = 0.75
)

// maxQueryTerms bounds the words of a query, as the knowledge base does.
const maxQueryTerms = 64

// Words splits text into the words FTS5's unicode61 tokenizer finds:
// runs of letters and digits.
func Words(text string) []string {
	return strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}

// humps puts a space inside each word written in camelCase, where a lower
// case letter meets an upper case one, so getFileInfo is found by "file
// info". Names of tools are written so; the knowledge base's text is not.
func humps(text string) string {
	var sb strings.Builder
	prev := rune(0)
	for _, r := range text {
		if unicode.IsUpper(r) && unicode.IsLower(prev) {
			sb.WriteByte(' ')
		}
		sb.WriteRune(r)
		prev = r
	}
	return sb.String()
}

// StopWord reports whether w, in lower case, is a word of English
// questions that says little of what is asked. In a small corpus, a
// "which" found in one description would outweigh the words that matter.
func StopWord(w string) bool { return stopWords[w] }

var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a about an and are as at be by can could did do does for from had has have how i if in
		is it its me my of on or our should so than that the their them then there these they this to was we were what
		when where which who whom why will with would you your`) {
		stopWords[w] = true
	}
}

// QueryTerms returns the distinct words of a query, in lower case, at
// most max of them. Stop words are left out, unless the query has no
// other word.
func QueryTerms(q string, max int) []string {
	words := Words(q)
	content := slices.ContainsFunc(words, func(w string) bool { return !stopWords[strings.ToLower(w)] })
	seen := map[string]bool{}
	var terms []string
	for _, w := range words {
		w = strings.ToLower(w)
		if seen[w] || len(terms) == max || (content && stopWords[w]) {
			continue
		}
		seen[w] = true
		terms = append(terms, w)
	}
	return terms
}

// stem folds the plural of an English word into its singular (Harman's S
// stemmer), so that "files" finds "file". FTS5's Porter stemmer does more;
// names and short descriptions need no more.
func stem(w string) string {
	switch n := len(w); {
	case n > 4 && strings.HasSuffix(w, "ies") && !strings.HasSuffix(w, "eies") && !strings.HasSuffix(w, "aies"):
		return w[:n-3] + "y"
	case n > 3 && strings.HasSuffix(w, "es") && !strings.HasSuffix(w, "aes") && !strings.HasSuffix(w, "ees") && !strings.HasSuffix(w, "oes"):
		return w[:n-1]
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "ss"):
		return w[:n-1]
	}
	return w
}

// An Index ranks documents made of weighted fields. Build it with [New];
// it is immutable and safe for concurrent use.
type Index struct {
	postings map[string][]posting // the documents holding each term
	lens     []float64            // each document's length in words, all fields
	avg      float64              // the documents' mean length
}

// A posting is a term's weighted count in one document.
type posting struct {
	doc int
	f   float64
}

// New indexes docs: docs[i][f] is the text of field f of document i, and
// weights[f] its weight (2 counts a word there twice). Each field's first
// limit bytes are indexed, so a huge description costs no more than limit.
func New(docs [][]string, weights []float64, limit int) *Index {
	ix := &Index{postings: map[string][]posting{}, lens: make([]float64, len(docs))}
	var total float64
	for i, fields := range docs {
		tf := map[string]float64{}
		for f, text := range fields {
			for _, w := range Words(humps(text[:min(len(text), limit)])) {
				tf[stem(strings.ToLower(w))] += weights[f]
				ix.lens[i]++
			}
		}
		for term, f := range tf {
			ix.postings[term] = append(ix.postings[term], posting{i, f})
		}
		total += ix.lens[i]
	}
	if len(docs) > 0 {
		ix.avg = max(total/float64(len(docs)), 1)
	}
	return ix
}

// Search returns the indexes of the documents matching any of the query's
// terms, best first, at most k of them. Equal scores keep the documents'
// order.
func (ix *Index) Search(query string, k int) []int {
	terms := QueryTerms(humps(query), maxQueryTerms)
	for i, t := range terms {
		terms[i] = stem(t)
	}
	slices.Sort(terms)
	terms = slices.Compact(terms)
	n := float64(len(ix.lens))
	scores := map[int]float64{}
	for _, term := range terms {
		ps := ix.postings[term]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := max(math.Log((n-df+0.5)/(df+0.5)), 1e-6) // FTS5's floor
		for _, p := range ps {
			scores[p.doc] += idf * p.f * (k1 + 1) / (p.f + k1*(1-b+b*ix.lens[p.doc]/ix.avg))
		}
	}
	hits := slices.Collect(maps.Keys(scores))
	slices.SortFunc(hits, func(x, y int) int {
		if c := cmp.Compare(scores[y], scores[x]); c != 0 {
			return c
		}
		return x - y
	})
	return hits[:min(k, len(hits))]
}
