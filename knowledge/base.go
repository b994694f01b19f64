package knowledge

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/robby-go/robby/internal/sqlitefile"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go
)

// ErrClosed is returned by the methods of a Base after [Base.Close].
var ErrClosed = errors.New("knowledge: base is closed")

// A Base is a knowledge base kept in one SQLite file. It holds documents cut
// into passages ("chunks"), and a full-text index over them (FTS5, ranked by
// BM25). With an [Embedder], it also holds their vectors. Its tables are all
// named kb_*, so the file can hold other tables too, such as robby's sessions.
//
// A Base is safe for concurrent use, also by several processes on one file;
// writes take turns.
type Base struct {
	db     *sql.DB
	ownDB  bool
	cfg    config
	write  sync.Mutex // one writer at a time in this process
	vecs   vectorCache
	closed chan struct{}
	once   sync.Once
}

// An Option configures a Base.
type Option func(*config) error

type config struct {
	embedder Embedder
	split    splitter
}

// WithEmbedder makes the Base embed every chunk it indexes with e and
// search by vector too. Vectors are cached by model and content, so a
// document indexed again, or the same passage in two documents, is
// embedded once. Without an embedder, search is by keyword only.
func WithEmbedder(e Embedder) Option {
	return func(c *config) error {
		if e == nil {
			return errors.New("knowledge: nil embedder")
		}
		c.embedder = e
		return nil
	}
}

// WithChunkSize sets the largest chunk, in bytes of text (default
// [DefaultChunkSize]). overlap is how much of a chunk's end the next one in the
// same section repeats (default [DefaultChunkOverlap]). Changing them re-chunks
// documents when they are next added, not before.
func WithChunkSize(size, overlap int) Option {
	return func(c *config) error {
		if size < 64 || overlap < 0 || overlap >= size/2 {
			return fmt.Errorf("knowledge: chunk size %d and overlap %d: want size ≥ 64 and 0 ≤ overlap < size/2", size, overlap)
		}
		c.split = splitter{size: size, overlap: overlap}
		return nil
	}
}

// Open opens the knowledge base in the SQLite file at path, creating the
// file and its tables if needed. The path is a file's path, never a URI:
// "notes#1.db" is that file.
func Open(path string, opts ...Option) (*Base, error) {
	dsn, err := sqlitefile.URI(path, url.Values{"_pragma": {
		"foreign_keys(1)", "busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)"}})
	if err != nil {
		return nil, fmt.Errorf("knowledge: open %q: %w", path, err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("knowledge: open %s: %w", path, err)
	}
	b, err := newBase(db, true, opts)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("knowledge: open %s: %w", path, err)
	}
	return b, nil
}

// OpenDB is [Open] over a database the caller opened with the
// modernc.org/sqlite driver, such as the one a session store uses. Close
// leaves db open.
func OpenDB(db *sql.DB, opts ...Option) (*Base, error) {
	return newBase(db, false, opts)
}

func newBase(db *sql.DB, own bool, opts []Option) (*Base, error) {
	cfg := config{split: splitter{size: DefaultChunkSize, overlap: DefaultChunkOverlap}}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if _, err := db.Exec(schema); err != nil {
		return nil, fmt.Errorf("knowledge: create tables: %w", err)
	}
	return &Base{db: db, ownDB: own, cfg: cfg, closed: make(chan struct{})}, nil
}

// schema creates the tables. kb_chunks holds the passages. kb_fts indexes their
// text, headings and document ids, kept in step by triggers. kb_vectors caches
// embeddings by model and chunk hash. kb_state counts changes.
const schema = `
CREATE TABLE IF NOT EXISTS kb_documents (
	id       TEXT PRIMARY KEY,
	format   TEXT NOT NULL,
	title    TEXT NOT NULL,
	hash     TEXT NOT NULL,
	metadata TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS kb_chunks (
	id         INTEGER PRIMARY KEY,
	doc_id     TEXT NOT NULL REFERENCES kb_documents(id) ON DELETE CASCADE,
	seq        INTEGER NOT NULL,
	heading    TEXT NOT NULL,
	text       TEXT NOT NULL,
	start_byte INTEGER NOT NULL,
	end_byte   INTEGER NOT NULL,
	start_line INTEGER NOT NULL,
	end_line   INTEGER NOT NULL,
	hash       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS kb_chunks_doc ON kb_chunks(doc_id);
CREATE INDEX IF NOT EXISTS kb_chunks_hash ON kb_chunks(hash);
CREATE VIRTUAL TABLE IF NOT EXISTS kb_fts USING fts5(
	text, heading, doc_id, content='kb_chunks', content_rowid='id', tokenize='porter unicode61'
);
INSERT INTO kb_fts(kb_fts, rank) SELECT 'rank', 'bm25(1.0, 2.0, 1.0)'
	WHERE NOT EXISTS (SELECT 1 FROM kb_fts_config WHERE k = 'rank');
CREATE TRIGGER IF NOT EXISTS kb_chunks_insert AFTER INSERT ON kb_chunks BEGIN
	INSERT INTO kb_fts(rowid, text, heading, doc_id) VALUES (new.id, new.text, new.heading, new.doc_id);
END;
CREATE TRIGGER IF NOT EXISTS kb_chunks_delete AFTER DELETE ON kb_chunks BEGIN
	INSERT INTO kb_fts(kb_fts, rowid, text, heading, doc_id) VALUES ('delete', old.id, old.text, old.heading, old.doc_id);
END;
CREATE TABLE IF NOT EXISTS kb_vectors (
	model TEXT NOT NULL,
	hash  TEXT NOT NULL,
	dim   INTEGER NOT NULL,
	vec   BLOB NOT NULL,
	PRIMARY KEY (model, hash)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kb_state (
	key   TEXT PRIMARY KEY,
	value INTEGER NOT NULL
);
INSERT OR IGNORE INTO kb_state(key, value) VALUES ('version', 0);
`

// bumpVersion marks a change of chunks or vectors, so that every process
// using the file reloads its in-memory vectors.
func bumpVersion(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `UPDATE kb_state SET value = value + 1 WHERE key = 'version'`)
	return err
}

// Close closes the database, if Open opened it. Close is idempotent.
func (b *Base) Close() error {
	var err error
	b.once.Do(func() {
		close(b.closed)
		b.write.Lock()
		defer b.write.Unlock()
		if b.ownDB {
			err = b.db.Close()
		}
	})
	return err
}

func (b *Base) isClosed() bool {
	select {
	case <-b.closed:
		return true
	default:
		return false
	}
}

// A Document is a text to index.
type Document struct {
	// ID names the document, such as its path: results cite it, and
	// adding a document with the same ID replaces it.
	ID string
	// Text is the document's content, in its Format.
	Text string
	// Format says how to read Text; "" is [Text].
	Format Format
	// Metadata are values search can filter on, such as "lang": "en".
	Metadata map[string]string
}

// A Report says what adding documents did.
type Report struct {
	Added     int // documents new to the base
	Updated   int // documents whose content changed, re-indexed
	Unchanged int // documents already indexed as they are, skipped
	Deleted   int // documents removed, from a folder where they are gone
	Skipped   int // documents that could not be read or indexed, each a [DocumentError]
	Chunks    int // chunks written
	Embedded  int // chunks sent to the embedder; the others' vectors were cached
}

// A DocumentError is why one document was skipped: the others were
// indexed. [Base.Add] and [Base.AddDir] return every one, joined.
type DocumentError struct {
	ID  string // the document's ID; for AddDir, its path
	Err error
}

func (e *DocumentError) Error() string { return fmt.Sprintf("%q: %v", e.ID, e.Err) }

func (e *DocumentError) Unwrap() error { return e.Err }

// Add indexes documents, in one transaction. A new or changed document is cut
// into chunks that replace its old ones. One whose content and metadata are
// unchanged (same hash) is skipped. A document that cannot be indexed is
// skipped, and its old version kept. (It has no ID, an unknown format, or HTML
// the parser refuses.) The error names it by a [DocumentError]; the others are
// indexed. With an embedder, the chunks that have no vector yet are then
// embedded. If that fails, the documents stay indexed for keyword search, and
// the next Add embeds what is missing.
func (b *Base) Add(ctx context.Context, docs ...Document) (Report, error) {
	var rep Report
	if b.isClosed() {
		return rep, ErrClosed
	}
	b.write.Lock()
	defer b.write.Unlock()
	skipped, err := b.addLocked(ctx, docs, &rep)
	if err == nil {
		err = b.embedMissing(ctx, &rep)
	}
	if err == nil && len(skipped) > 0 {
		err = fmt.Errorf("knowledge: add: %w", errors.Join(skipped...))
	}
	return rep, err
}

// addLocked adds docs in one transaction and returns the DocumentErrors of
// those it skipped. Its error is the database's, and then nothing is added.
func (b *Base) addLocked(ctx context.Context, docs []Document, rep *Report) ([]error, error) {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("knowledge: add: %w", err)
	}
	defer tx.Rollback()
	changed := false
	var skipped []error
	for _, d := range docs {
		did, err := b.addDocument(ctx, tx, d, rep)
		var derr *DocumentError
		if errors.As(err, &derr) {
			rep.Skipped++
			skipped = append(skipped, derr)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("knowledge: add %q: %w", d.ID, err)
		}
		changed = changed || did
	}
	if changed {
		if err := bumpVersion(ctx, tx); err != nil {
			return nil, fmt.Errorf("knowledge: add: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("knowledge: add: %w", err)
	}
	return skipped, nil
}

// addDocument writes d's chunks unless it is indexed as it is; it reports
// whether it wrote anything. A fault of d itself is a *DocumentError,
// returned before anything of d is written.
func (b *Base) addDocument(ctx context.Context, tx *sql.Tx, d Document, rep *Report) (bool, error) {
	if d.ID == "" {
		return false, &DocumentError{Err: errors.New("empty document id")}
	}
	if !utf8.ValidString(d.Text) {
		d.Text = strings.ToValidUTF8(d.Text, "\uFFFD")
	}
	format := d.Format
	if format == "" {
		format = Text
	}
	meta, err := json.Marshal(d.Metadata) // sorted keys: a stable hash
	if err != nil {
		return false, err
	}
	hash := hashOf(string(format), "\x00", string(meta), "\x00", d.Text, "\x00", fmt.Sprint(b.cfg.split))
	var old string
	switch err := tx.QueryRowContext(ctx, `SELECT hash FROM kb_documents WHERE id = ?`, d.ID).Scan(&old); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return false, err
	case old == hash:
		rep.Unchanged++
		return false, nil
	}
	text, title := d.Text, ""
	switch format {
	case HTML:
		if text, title, err = htmlText(d.Text); err != nil {
			return false, &DocumentError{ID: d.ID, Err: err}
		}
	case Markdown:
		title = markdownTitle(text)
	case Text:
	default:
		return false, &DocumentError{ID: d.ID, Err: fmt.Errorf("unknown format %q", format)}
	}
	if old != "" {
		rep.Updated++
		if _, err := tx.ExecContext(ctx, `DELETE FROM kb_chunks WHERE doc_id = ?`, d.ID); err != nil {
			return false, err
		}
	} else {
		rep.Added++
	}
	if meta == nil || string(meta) == "null" {
		meta = []byte("{}")
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO kb_documents(id, format, title, hash, metadata) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET format = excluded.format, title = excluded.title, hash = excluded.hash, metadata = excluded.metadata`,
		d.ID, string(format), title, hash, string(meta)); err != nil {
		return false, err
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO kb_chunks(doc_id, seq, heading, text, start_byte, end_byte, start_line, end_line, hash)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return false, err
	}
	defer stmt.Close()
	lines := newLineIndex(text)
	for i, c := range b.cfg.split.split(text, format != Text) {
		body := text[c.start:c.end]
		if _, err := stmt.ExecContext(ctx, d.ID, i, c.heading, body, c.start, c.end,
			lines.line(c.start), lines.line(c.end-1), hashOf(embedText(title, c.heading, body))); err != nil {
			return false, err
		}
		rep.Chunks++
	}
	return true, nil
}

// embedText is what the embedder reads for a chunk: the passage with the
// document's title and headings, which tell what it is about.
func embedText(title, heading, text string) string {
	var b strings.Builder
	if title != "" && !strings.HasPrefix(heading, title) {
		b.WriteString(title + "\n")
	}
	if heading != "" {
		b.WriteString(heading + "\n")
	}
	b.WriteString(text)
	return b.String()
}

func hashOf(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Delete removes documents by id; ids not in the base are ignored. It
// reports how many were removed.
func (b *Base) Delete(ctx context.Context, ids ...string) (int, error) {
	if b.isClosed() {
		return 0, ErrClosed
	}
	b.write.Lock()
	defer b.write.Unlock()
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("knowledge: delete: %w", err)
	}
	defer tx.Rollback()
	n, err := deleteDocs(ctx, tx, ids)
	if err == nil && n > 0 {
		err = bumpVersion(ctx, tx)
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		return 0, fmt.Errorf("knowledge: delete: %w", err)
	}
	return n, nil
}

func deleteDocs(ctx context.Context, tx *sql.Tx, ids []string) (int, error) {
	n := 0
	for _, id := range ids {
		// Chunks first, so that the trigger keeps the full-text index in step.
		if _, err := tx.ExecContext(ctx, `DELETE FROM kb_chunks WHERE doc_id = ?`, id); err != nil {
			return n, err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM kb_documents WHERE id = ?`, id)
		if err != nil {
			return n, err
		}
		k, _ := res.RowsAffected()
		n += int(k)
	}
	return n, nil
}

// A DocumentInfo describes an indexed document.
type DocumentInfo struct {
	ID       string
	Title    string
	Format   Format
	Chunks   int
	Metadata map[string]string
}

// Documents lists the indexed documents, by id.
func (b *Base) Documents(ctx context.Context) ([]DocumentInfo, error) {
	if b.isClosed() {
		return nil, ErrClosed
	}
	rows, err := b.db.QueryContext(ctx, `SELECT d.id, d.title, d.format, d.metadata,
		(SELECT count(*) FROM kb_chunks c WHERE c.doc_id = d.id) FROM kb_documents d ORDER BY d.id`)
	if err != nil {
		return nil, fmt.Errorf("knowledge: documents: %w", err)
	}
	defer rows.Close()
	var out []DocumentInfo
	for rows.Next() {
		var d DocumentInfo
		var meta string
		if err := rows.Scan(&d.ID, &d.Title, &d.Format, &meta, &d.Chunks); err != nil {
			return nil, fmt.Errorf("knowledge: documents: %w", err)
		}
		if err := json.Unmarshal([]byte(meta), &d.Metadata); err != nil {
			return nil, fmt.Errorf("knowledge: documents: %q metadata: %w", d.ID, err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// lineIndex maps byte offsets of a text to line numbers.
type lineIndex []int // the offset each line starts at

func newLineIndex(text string) lineIndex {
	idx := lineIndex{0}
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			idx = append(idx, i+1)
		}
	}
	return idx
}

// line returns the line, from 1, that holds offset.
func (l lineIndex) line(offset int) int {
	lo, hi := 0, len(l)
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if l[mid] <= offset {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo + 1
}
