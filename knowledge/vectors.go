package knowledge

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
)

// embedPage is how many chunks embedMissing reads at a time.
const embedPage = 512

// embedMissing embeds the chunks that have no vector for the embedder's
// model yet and stores their vectors. The caller holds b.write.
func (b *Base) embedMissing(ctx context.Context, rep *Report) error {
	e := b.cfg.embedder
	if e == nil {
		return nil
	}
	for {
		hashes, texts, err := b.unembedded(ctx, e.Model())
		if err != nil || len(hashes) == 0 {
			return err
		}
		vecs, err := e.Embed(ctx, texts)
		if err == nil && len(vecs) != len(texts) {
			err = fmt.Errorf("knowledge: embedder returned %d vectors for %d texts", len(vecs), len(texts))
		}
		if err != nil {
			return err
		}
		if err := b.storeVectors(ctx, e.Model(), hashes, vecs); err != nil {
			return err
		}
		rep.Embedded += len(hashes)
	}
}

// unembedded returns up to embedPage chunks with no vector for model, as
// their hashes and the text to embed.
func (b *Base) unembedded(ctx context.Context, model string) (hashes, texts []string, err error) {
	rows, err := b.db.QueryContext(ctx, `SELECT c.hash, d.title, c.heading, c.text
		FROM kb_chunks c JOIN kb_documents d ON d.id = c.doc_id
		WHERE NOT EXISTS (SELECT 1 FROM kb_vectors v WHERE v.model = ? AND v.hash = c.hash)
		GROUP BY c.hash LIMIT ?`, model, embedPage)
	if err != nil {
		return nil, nil, fmt.Errorf("knowledge: embed: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h, title, heading, text string
		if err := rows.Scan(&h, &title, &heading, &text); err != nil {
			return nil, nil, fmt.Errorf("knowledge: embed: %w", err)
		}
		hashes = append(hashes, h)
		texts = append(texts, embedText(title, heading, text))
	}
	return hashes, texts, rows.Err()
}

func (b *Base) storeVectors(ctx context.Context, model string, hashes []string, vecs [][]float32) error {
	var dim int
	err := b.db.QueryRowContext(ctx, `SELECT dim FROM kb_vectors WHERE model = ? LIMIT 1`, model).Scan(&dim)
	if err != nil && err != sql.ErrNoRows {
		return fmt.Errorf("knowledge: embed: %w", err)
	}
	if dim == 0 && len(vecs) > 0 {
		dim = len(vecs[0])
	}
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("knowledge: embed: %w", err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO kb_vectors(model, hash, dim, vec) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("knowledge: embed: %w", err)
	}
	defer stmt.Close()
	if err := bumpVersion(ctx, tx); err != nil {
		return fmt.Errorf("knowledge: embed: %w", err)
	}
	for i, v := range vecs {
		if len(v) != dim || dim == 0 {
			return fmt.Errorf("%w: model %q gave %d, expected %d", ErrDimensions, model, len(v), dim)
		}
		normalize(v)
		if _, err := stmt.ExecContext(ctx, model, hashes[i], dim, encodeVector(v)); err != nil {
			return fmt.Errorf("knowledge: embed: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("knowledge: embed: %w", err)
	}
	return nil
}

func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// A vectorIndex holds every chunk's vector for one model in memory, in one
// contiguous slice. Exact search scans its n×dim float32s.
type vectorIndex struct {
	model   string
	version int64 // kb_state's version it was loaded at
	dim     int
	ids     []int64   // chunk ids, ascending
	vecs    []float32 // len(ids)×dim, the vector of ids[i] at [i*dim:(i+1)*dim]
}

// vectorCache keeps the index loaded from the database until a write, by
// any process, changes the version in kb_state.
type vectorCache struct {
	mu    sync.Mutex
	index *vectorIndex
}

// get returns the index for model, loading it if it changed. Searches that
// arrive during a load wait for it.
func (c *vectorCache) get(ctx context.Context, db *sql.DB, model string) (*vectorIndex, error) {
	var version int64
	if err := db.QueryRowContext(ctx, `SELECT value FROM kb_state WHERE key = 'version'`).Scan(&version); err != nil {
		return nil, fmt.Errorf("knowledge: load vectors: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.index != nil && c.index.model == model && c.index.version == version {
		return c.index, nil
	}
	c.index = nil // let the old one go before loading the new
	ix, err := loadVectors(ctx, db, model)
	if err != nil {
		return nil, err
	}
	c.index = ix
	return ix, nil
}

func loadVectors(ctx context.Context, db *sql.DB, model string) (*vectorIndex, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("knowledge: load vectors: %w", err)
	}
	defer tx.Rollback()
	ix := &vectorIndex{model: model}
	var n int
	err = tx.QueryRowContext(ctx, `SELECT value FROM kb_state WHERE key = 'version'`).Scan(&ix.version)
	if err == nil {
		err = tx.QueryRowContext(ctx, `SELECT count(*) FROM kb_chunks`).Scan(&n)
	}
	if err != nil {
		return nil, fmt.Errorf("knowledge: load vectors: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT c.id, v.dim, v.vec FROM kb_chunks c
		JOIN kb_vectors v ON v.model = ? AND v.hash = c.hash ORDER BY c.id`, model)
	if err != nil {
		return nil, fmt.Errorf("knowledge: load vectors: %w", err)
	}
	defer rows.Close()
	var raw []byte
	for rows.Next() {
		var id int64
		var dim int
		if err := rows.Scan(&id, &dim, &raw); err != nil {
			return nil, fmt.Errorf("knowledge: load vectors: %w", err)
		}
		if ix.dim == 0 {
			ix.dim = dim
			ix.ids = make([]int64, 0, n)
			ix.vecs = make([]float32, 0, n*dim)
		}
		if dim != ix.dim || len(raw) != 4*dim {
			return nil, fmt.Errorf("%w: chunk %d of model %q", ErrDimensions, id, model)
		}
		ix.ids = append(ix.ids, id)
		for i := 0; i < dim; i++ {
			ix.vecs = append(ix.vecs, math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
		}
	}
	return ix, rows.Err()
}

// A scored is a chunk with its score, higher better.
type scored struct {
	id    int64
	score float64
}

// search returns the k chunks most similar to q (normalised), best first.
// allow, if not nil, says which positions may be returned. It scans every
// vector: no allocation per row, four products at a time.
func (ix *vectorIndex) search(q []float32, k int, allow func(id int64) bool) []scored {
	if ix.dim == 0 || len(q) != ix.dim || k <= 0 {
		return nil
	}
	top := make([]scored, 0, k+1) // ascending by score: top[0] is the weakest kept
	dim := ix.dim
	for i, id := range ix.ids {
		s := float64(dot(ix.vecs[i*dim:(i+1)*dim:(i+1)*dim], q))
		if len(top) == k && s <= top[0].score {
			continue
		}
		if allow != nil && !allow(id) {
			continue
		}
		// Insert in order; k is small.
		j := len(top)
		top = append(top, scored{})
		for j > 0 && top[j-1].score > s {
			top[j] = top[j-1]
			j--
		}
		top[j] = scored{id: id, score: s}
		if len(top) > k {
			copy(top, top[1:])
			top = top[:k]
		}
	}
	for i, j := 0, len(top)-1; i < j; i, j = i+1, j-1 {
		top[i], top[j] = top[j], top[i]
	}
	return top
}

func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}
