package knowledge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/robby-go/robby/internal/bm25"
)

// A Retriever finds the passages that answer a query. [Base] is one. A program
// can plug in its own (pgvector, an MCP search server, a web search) and give
// it to [Tool] and [Context].
type Retriever interface {
	Search(ctx context.Context, query string, opts SearchOptions) ([]Hit, error)
}

// A Mode chooses how a [Base] ranks passages.
type Mode string

// The search modes.
const (
	// Hybrid fuses the keyword and vector rankings with reciprocal rank fusion.
	// It is the default when the Base has an embedder, Keyword otherwise.
	Hybrid Mode = "hybrid"
	// Keyword ranks by BM25 over the full-text index (FTS5, Porter
	// stemming), the passage's headings and document id included.
	Keyword Mode = "keyword"
	// Vector ranks by cosine similarity of embeddings, computed exactly
	// over every passage.
	Vector Mode = "vector"
)

// DefaultLimit is how many passages a search returns when not told.
const DefaultLimit = 5

// rrfK is reciprocal rank fusion's constant: a passage ranked r-th (from
// 1) in a list scores 1/(rrfK+r). 60 is the value of Cormack et al., which
// most systems keep.
const rrfK = 60

// maxQueryTerms bounds the words of a keyword query.
const maxQueryTerms = 64

// ErrNoEmbedder is the error of a vector search on a Base with no embedder.
var ErrNoEmbedder = errors.New("knowledge: vector search needs an embedder")

// SearchOptions narrow a search. The zero value returns [DefaultLimit]
// passages in the Base's default mode.
type SearchOptions struct {
	// Limit is how many passages to return (default DefaultLimit).
	Limit int
	// Mode is how to rank (default Hybrid with an embedder, else Keyword).
	Mode Mode
	// Filter keeps the passages of documents whose metadata has each of
	// these keys with exactly this value.
	Filter map[string]string
}

// A Hit is a passage a search found, with where it comes from, for a
// citation.
type Hit struct {
	// Source is the document's ID, such as a file's path.
	Source string `json:"source"`
	// Title is the document's title, if it has one.
	Title string `json:"title,omitempty"`
	// Heading is the path of headings the passage sits under,
	// "Install > Linux".
	Heading string `json:"heading,omitempty"`
	// Text is the passage.
	Text string `json:"text"`
	// Chunk is the passage's number in its document, from 0.
	Chunk int `json:"chunk"`
	// StartLine and EndLine are the lines the passage spans, from 1, in
	// the document's text (for HTML, in the text made of it).
	StartLine int `json:"start_line"`
	EndLine   int `json:"end_line"`
	// Start and End are the passage's byte offsets in the same text.
	Start int `json:"start"`
	End   int `json:"end"`
	// Score orders the hits of one search, higher better; scores of
	// different searches or modes do not compare.
	Score float64 `json:"score"`
	// Metadata is the document's metadata.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Citation returns "source:start-end", the form the model is asked to cite
// passages in.
func (h Hit) Citation() string {
	if h.StartLine == h.EndLine {
		return h.Source + ":" + strconv.Itoa(h.StartLine)
	}
	return fmt.Sprintf("%s:%d-%d", h.Source, h.StartLine, h.EndLine)
}

// Search returns the passages that best match query. Passages with the
// same text and headings, from copies of one document, are returned once.
func (b *Base) Search(ctx context.Context, query string, opts SearchOptions) ([]Hit, error) {
	if b.isClosed() {
		return nil, ErrClosed
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	mode := opts.Mode
	if mode == "" {
		mode = Keyword
		if b.cfg.embedder != nil {
			mode = Hybrid
		}
	}
	// Each ranking gives more candidates than asked for: fusion needs
	// depth, and copies are dropped afterwards.
	depth := max(4*limit, 50)
	var lists [][]scored
	switch mode {
	case Keyword, Hybrid, Vector:
	default:
		return nil, fmt.Errorf("knowledge: unknown search mode %q", mode)
	}
	if mode != Vector {
		kw, err := b.keyword(ctx, query, opts.Filter, depth)
		if err != nil {
			return nil, err
		}
		lists = append(lists, kw)
	}
	if mode != Keyword {
		vec, err := b.vector(ctx, query, opts.Filter, depth)
		if err != nil {
			return nil, err
		}
		lists = append(lists, vec)
	}
	ranked := lists[0]
	if len(lists) > 1 {
		ranked = fuse(lists...)
	}
	return b.hits(ctx, ranked, limit)
}

// keyword ranks chunks by BM25, headings weighing twice the text (the
// rank kb_fts is configured with). Without a filter, the query is FTS5's
// own top-k over its index; with one, each match is joined with its
// document.
func (b *Base) keyword(ctx context.Context, query string, filter map[string]string, depth int) ([]scored, error) {
	match := ftsQuery(query)
	if match == "" {
		return nil, nil
	}
	q := `SELECT rowid, rank FROM kb_fts WHERE kb_fts MATCH ? ORDER BY rank LIMIT ?`
	args := []any{match, depth}
	if len(filter) > 0 {
		where, fargs := filterSQL(filter)
		q = `SELECT f.rowid, f.rank FROM kb_fts f JOIN kb_chunks c ON c.id = f.rowid JOIN kb_documents d ON d.id = c.doc_id
			WHERE kb_fts MATCH ?` + where + ` ORDER BY f.rank LIMIT ?`
		args = append(append([]any{match}, fargs...), depth)
	}
	rows, err := b.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("knowledge: keyword search: %w", err)
	}
	defer rows.Close()
	var out []scored
	for rows.Next() {
		var s scored
		if err := rows.Scan(&s.id, &s.score); err != nil {
			return nil, fmt.Errorf("knowledge: keyword search: %w", err)
		}
		s.score = -s.score // FTS5's bm25 is lower for better matches
		out = append(out, s)
	}
	return out, rows.Err()
}

// ftsQuery makes an FTS5 query of free text, any of its words matching. Each
// word is quoted, so no word is read as an operator. English stop words are
// left out, unless the query has no other word (bm25.QueryTerms, which the
// agent's tool search shares).
func ftsQuery(q string) string {
	terms := bm25.QueryTerms(q, maxQueryTerms)
	for i, t := range terms {
		terms[i] = `"` + t + `"`
	}
	return strings.Join(terms, " OR ")
}

// filterSQL returns the conditions on d.metadata that filter stands for.
func filterSQL(filter map[string]string) (string, []any) {
	keys := make([]string, 0, len(filter))
	for k := range filter {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	var args []any
	for _, k := range keys {
		b.WriteString(` AND EXISTS (SELECT 1 FROM json_each(d.metadata) m WHERE m.key = ? AND m.value = ?)`)
		args = append(args, k, filter[k])
	}
	return b.String(), args
}

// vector ranks chunks by cosine similarity to the query's embedding.
func (b *Base) vector(ctx context.Context, query string, filter map[string]string, depth int) ([]scored, error) {
	e := b.cfg.embedder
	if e == nil {
		return nil, ErrNoEmbedder
	}
	if strings.TrimSpace(query) == "" {
		return nil, nil
	}
	ix, err := b.vecs.get(ctx, b.db, e.Model())
	if err != nil {
		return nil, err
	}
	if len(ix.ids) == 0 {
		return nil, nil
	}
	q, err := e.Embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("knowledge: embed the query: %w", err)
	}
	if len(q) != 1 || len(q[0]) != ix.dim {
		return nil, fmt.Errorf("%w: the query's vector does not match the index's %d", ErrDimensions, ix.dim)
	}
	normalize(q[0])
	var allow func(int64) bool
	if len(filter) > 0 {
		ids, err := b.filtered(ctx, filter)
		if err != nil {
			return nil, err
		}
		allow = func(id int64) bool { return ids[id] }
	}
	return ix.search(q[0], depth, allow), nil
}

// filtered returns the ids of the chunks whose document passes filter.
func (b *Base) filtered(ctx context.Context, filter map[string]string) (map[int64]bool, error) {
	where, args := filterSQL(filter)
	rows, err := b.db.QueryContext(ctx, `SELECT c.id FROM kb_chunks c JOIN kb_documents d ON d.id = c.doc_id WHERE 1`+where, args...)
	if err != nil {
		return nil, fmt.Errorf("knowledge: filter: %w", err)
	}
	defer rows.Close()
	ids := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("knowledge: filter: %w", err)
		}
		ids[id] = true
	}
	return ids, rows.Err()
}

// fuse merges rankings by reciprocal rank fusion.
func fuse(lists ...[]scored) []scored {
	score := map[int64]float64{}
	for _, l := range lists {
		for r, s := range l {
			score[s.id] += 1 / float64(rrfK+r+1)
		}
	}
	out := make([]scored, 0, len(score))
	for id, s := range score {
		out = append(out, scored{id: id, score: s})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].id < out[j].id
	})
	return out
}

// hits reads the ranked chunks, dropping copies, until limit.
func (b *Base) hits(ctx context.Context, ranked []scored, limit int) ([]Hit, error) {
	var out []Hit
	seen := map[string]bool{}
	for start := 0; start < len(ranked) && len(out) < limit; start += limit {
		page := ranked[start:min(start+limit, len(ranked))]
		hs, hashes, err := b.read(ctx, page)
		if err != nil {
			return nil, err
		}
		for i, h := range hs {
			if seen[hashes[i]] || len(out) == limit {
				continue
			}
			seen[hashes[i]] = true
			out = append(out, h)
		}
	}
	return out, nil
}

// read loads chunks by id, in the order given, with their hashes.
func (b *Base) read(ctx context.Context, page []scored) ([]Hit, []string, error) {
	ids := make([]string, len(page))
	for i, s := range page {
		ids[i] = strconv.FormatInt(s.id, 10)
	}
	rows, err := b.db.QueryContext(ctx, `SELECT c.id, c.doc_id, d.title, c.heading, c.text, c.seq, c.start_line, c.end_line,
		c.start_byte, c.end_byte, c.hash, d.metadata
		FROM kb_chunks c JOIN kb_documents d ON d.id = c.doc_id WHERE c.id IN (`+strings.Join(ids, ",")+`)`)
	if err != nil {
		return nil, nil, fmt.Errorf("knowledge: read hits: %w", err)
	}
	defer rows.Close()
	type row struct {
		hit  Hit
		hash string
	}
	byID := map[int64]row{}
	for rows.Next() {
		var (
			id   int64
			r    row
			meta string
		)
		h := &r.hit
		if err := rows.Scan(&id, &h.Source, &h.Title, &h.Heading, &h.Text, &h.Chunk, &h.StartLine, &h.EndLine,
			&h.Start, &h.End, &r.hash, &meta); err != nil {
			return nil, nil, fmt.Errorf("knowledge: read hits: %w", err)
		}
		if err := json.Unmarshal([]byte(meta), &h.Metadata); err != nil {
			return nil, nil, fmt.Errorf("knowledge: read hits: %q metadata: %w", h.Source, err)
		}
		if len(h.Metadata) == 0 {
			h.Metadata = nil
		}
		byID[id] = r
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("knowledge: read hits: %w", err)
	}
	var hits []Hit
	var hashes []string
	for _, s := range page {
		r, ok := byID[s.id]
		if !ok { // deleted since it was ranked
			continue
		}
		r.hit.Score = s.score
		hits = append(hits, r.hit)
		hashes = append(hashes, r.hash)
	}
	return hits, hashes, nil
}
