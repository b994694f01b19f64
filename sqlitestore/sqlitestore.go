// Package sqlitestore is a [robby.Store] in one SQLite file, through the pure
// Go driver modernc.org/sqlite (no cgo).
//
// The file is in WAL mode: readers never wait for the writer. They share a
// pool of connections kept open, two a core (at least four). Writes of one
// process go through one connection: those waiting together share one
// transaction and its sync to disk, each in a savepoint of its own, so one
// that fails rolls back alone (group commit). Writes of several processes
// sharing the file wait for each other: a busy timeout, then retries until the
// context ends. So "database is locked" never reaches the caller. Every commit
// is synced to disk (synchronous=FULL). A message that Append stored survives a
// crash of the process or of the machine. Each statement is parsed once a
// connection and kept prepared.
//
// The store's tables are named robby_store_*. Other parts of an application
// (robby's knowledge base among them) may keep their own tables in the same
// file.
package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/convstore"
	"github.com/robby-go/robby/internal/sqlitefile"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// A Store is a [robby.Store] in a SQLite file. It is safe for concurrent
// use, and several processes may open the same file.
type Store struct {
	write *sql.DB // one connection: the writer's (writer.go)
	read  *sql.DB

	writeStmts, readStmts *stmtCache // statements prepared (stmts.go)

	writes    chan *write   // to the writer
	closing   chan struct{} // closed by Close
	stopped   chan struct{} // closed by the writer as it ends
	closeOnce sync.Once
	queued    atomic.Int32 // callers waiting to hand the writer a write
}

var _ robby.Store = (*Store)(nil)

// busyTimeout is how long SQLite itself waits for another process's write
// before a statement returns SQLITE_BUSY, which [Store] then retries.
const busyTimeout = 5 * time.Second

// Open opens the store in the SQLite file at path. It creates the file and the
// store's tables, or migrates them to this version's schema, as needed. The
// path is a file's path, never a URI: "what?.db" is that file. Close it when
// done.
func Open(ctx context.Context, path string) (*Store, error) {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Set("_txlock", "immediate") // take the write lock at BEGIN, not midway
	writeURI, err := sqlitefile.URI(path, q)
	if err != nil {
		return nil, fmt.Errorf("opening %q: %w", path, err)
	}
	wdb, err := sql.Open("sqlite", writeURI)
	if err != nil {
		return nil, fmt.Errorf("opening %q: %w", path, err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetConnMaxIdleTime(0)
	q.Del("_txlock")
	q.Add("_pragma", "query_only(1)")
	readURI, _ := sqlitefile.URI(path, q) // the same path: no error
	read, err := sql.Open("sqlite", readURI)
	if err != nil {
		wdb.Close()
		return nil, fmt.Errorf("opening %q: %w", path, err)
	}
	read.SetMaxOpenConns(readers())
	read.SetMaxIdleConns(readers())
	s := &Store{write: wdb, read: read, writeStmts: newStmtCache(wdb), readStmts: newStmtCache(read), writes: make(chan *write), closing: make(chan struct{}), stopped: make(chan struct{})}
	go s.writeLoop()
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("opening %q: %w", path, err)
	}
	return s, nil
}

// readers is how many connections read at once, all kept open. Opening one
// costs its pragmas and its statements prepared again: with database/sql's
// two idle connections, a burst of readers opened and closed one each, a
// tenth of robby serve's CPU time under load. Reading is CPU work here
// (pure Go SQLite, pages in memory), so a few a core is enough.
func readers() int { return max(4, 2*runtime.GOMAXPROCS(0)) }

// Close closes the database. Writes asked of it after, or still waiting for
// the writer, fail; the transaction being committed ends first.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.closing)
		<-s.stopped
		s.writeStmts.close()
		s.readStmts.close()
		err = errors.Join(s.write.Close(), s.read.Close())
	})
	return err
}

// isBusy reports an error that goes away by waiting: another process
// writes.
func isBusy(err error) bool {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}

const conversationColumns = `id, user_id, title, metadata, messages, created, updated, ` + convstore.UsageColumns

// scanConversation reads conversationColumns, then the extra columns
// asked for.
func scanConversation(row interface{ Scan(...any) error }, extra ...any) (robby.Conversation, error) {
	var c robby.Conversation
	var md string
	var created, updated int64
	dest := append([]any{&c.ID, &c.User, &c.Title, &md, &c.Messages, &created, &updated}, (*convstore.Usage)(&c.Usage).Dest()...)
	err := row.Scan(append(dest, extra...)...)
	if err != nil {
		return c, err
	}
	c.Created, c.Updated = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	c.Metadata, err = convstore.DecodeMetadata(md)
	return c, err
}

// Create implements [robby.Store].
func (s *Store) Create(ctx context.Context, c robby.Conversation, msgs ...robby.Message) (robby.Conversation, error) {
	if err := checkMessages(msgs); err != nil {
		return robby.Conversation{}, err
	}
	if c.ID == "" {
		c.ID = convstore.NewID()
	}
	c.Messages, c.Usage = 0, robby.Usage{}
	c.Metadata = maps.Clone(c.Metadata)
	c.Created = convstore.Now()
	c.Updated = c.Created
	c = counted(c, msgs)
	err := s.inTx(ctx, func(ctx context.Context, tx stmtTx) error {
		seg, err := newSegment(ctx, tx, c.User, 0, 0)
		if err != nil {
			return err
		}
		if err := insertConversation(ctx, tx, c, seg); err != nil {
			return err
		}
		return insertMessages(ctx, tx, seg, 0, msgs, c.Created)
	})
	if err != nil {
		return robby.Conversation{}, err
	}
	return c, nil
}

// counted is c once msgs were appended to it.
func counted(c robby.Conversation, msgs []robby.Message) robby.Conversation {
	c.Messages += int64(len(msgs))
	c.Usage = c.Usage.Add(convstore.SumUsage(msgs, usageOf))
	return c
}

// usageOf is a message's usage.
func usageOf(m robby.Message) robby.Usage { return m.Usage }

// checkMessages checks messages to store.
func checkMessages(msgs []robby.Message) error {
	return convstore.CheckMessages(msgs, func(m robby.Message) (json.RawMessage, string, convstore.Usage) {
		return m.Chat, m.Error, convstore.Usage(m.Usage)
	})
}

// insertConversation stores c, as counted, writing to segment seg. A row
// comes back only when it was inserted.
func insertConversation(ctx context.Context, tx stmtTx, c robby.Conversation, seg int64) error {
	var inserted int64
	err := tx.QueryRowContext(ctx, `INSERT INTO robby_store_conversations (`+conversationColumns+`, segment)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING segment`,
		append(append([]any{c.ID, c.User, c.Title, convstore.EncodeMetadata(c.Metadata), c.Messages, c.Created.UnixMicro(), c.Updated.UnixMicro()},
			convstore.Usage(c.Usage).Args()...), seg)...).Scan(&inserted)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("conversation %q: %w", c.ID, robby.ErrConversationExists)
	}
	return err
}

// Load implements [robby.Store]. It reads in one transaction, so the messages
// are those the conversation counts. They are its segment's, and those before
// each fork up the chain of segments it continues.
func (s *Store) Load(ctx context.Context, user, id string) (robby.Conversation, []robby.Message, error) {
	rtx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return robby.Conversation{}, nil, err
	}
	defer s.readStmts.prepare(ctx)
	defer rtx.Rollback()
	tx := stmtTx{rtx, s.readStmts}
	c, seg, err := getConversation(ctx, tx, user, id)
	if err != nil {
		return robby.Conversation{}, nil, err
	}
	rows, err := tx.QueryContext(ctx, chain+`SELECT m.seq, m.chat, m.error, m.agent, m.created, `+messageUsage+`
		FROM chain JOIN robby_store_messages m ON m.segment = chain.segment AND m.seq > chain.lo AND m.seq <= chain.hi
		ORDER BY m.seq`, c.Messages, seg)
	if err != nil {
		return robby.Conversation{}, nil, err
	}
	defer rows.Close()
	msgs := make([]robby.Message, 0, c.Messages)
	for rows.Next() {
		var m robby.Message
		var errText sql.NullString
		var created int64
		if err := rows.Scan(append([]any{&m.Seq, (*[]byte)(&m.Chat), &errText, &m.Agent, &created}, (*convstore.Usage)(&m.Usage).Dest()...)...); err != nil {
			return robby.Conversation{}, nil, err
		}
		m.Error, m.Created = errText.String, time.UnixMicro(created).UTC()
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return robby.Conversation{}, nil, err
	}
	return c, msgs, nil
}

// chain is the segments that hold messages 1 to hi of a conversation, from
// segment seg up. The query's arguments are hi and seg. Each segment holds the
// messages after lo up to hi.
const chain = `WITH RECURSIVE chain(segment, parent, lo, hi) AS (
	SELECT id, parent, base, ? FROM robby_store_segments WHERE id = ?
	UNION ALL
	SELECT s.id, s.parent, s.base, chain.lo FROM chain JOIN robby_store_segments s ON s.id = chain.parent
) `

// maxInt64 is the largest count a conversation's usage sums to.
const maxInt64 = "9223372036854775807"

// messageUsage and sumUsage read convstore.UsageColumns of messages m. A sum
// saturates at the largest int64, as robby.Usage.Add does. SQLite's sum fails
// on overflow. So counts are summed as REAL (total, exact up to 2^53) and cast
// back, which stops at the bound.
const (
	messageUsage = `m.prompt_tokens, m.completion_tokens, m.total_tokens, m.cached_prompt_tokens, m.reasoning_tokens, m.cost`
	sumUsage     = `CAST(total(m.prompt_tokens) AS INTEGER), CAST(total(m.completion_tokens) AS INTEGER),
		CAST(total(m.total_tokens) AS INTEGER), CAST(total(m.cached_prompt_tokens) AS INTEGER),
		CAST(total(m.reasoning_tokens) AS INTEGER), total(m.cost)`
)

// getConversation returns a conversation and the segment it writes to.
func getConversation(ctx context.Context, tx stmtTx, user, id string) (robby.Conversation, int64, error) {
	var seg int64
	row := tx.QueryRowContext(ctx, `SELECT `+conversationColumns+`, segment
		FROM robby_store_conversations WHERE user_id = ? AND id = ?`, user, id)
	c, err := scanConversation(row, &seg)
	if errors.Is(err, sql.ErrNoRows) {
		return c, 0, fmt.Errorf("conversation %q: %w", id, robby.ErrNoConversation)
	}
	return c, seg, err
}

// Append implements [robby.Store].
func (s *Store) Append(ctx context.Context, user, id string, after int64, msgs ...robby.Message) error {
	if err := checkMessages(msgs); err != nil {
		return err
	}
	now := convstore.Now()
	return s.inTx(ctx, func(ctx context.Context, tx stmtTx) error {
		if len(msgs) == 0 {
			_, err := touch(ctx, tx, user, id, after, nil, now)
			return err
		}
		return appendTx(ctx, tx, user, id, after, msgs, now)
	})
}

// appendTx stores msgs at the end of a conversation that holds after.
func appendTx(ctx context.Context, tx stmtTx, user, id string, after int64, msgs []robby.Message, now time.Time) error {
	if len(msgs) == 0 {
		return nil
	}
	seg, err := touch(ctx, tx, user, id, after, msgs, now)
	if err != nil {
		return err
	}
	return insertMessages(ctx, tx, seg, after, msgs, now)
}

// insertMessages stores msgs in segment seg, after message after. The
// conversation counts them already.
func insertMessages(ctx context.Context, tx stmtTx, seg, after int64, msgs []robby.Message, now time.Time) error {
	for i, m := range msgs {
		errText := sql.NullString{String: m.Error, Valid: m.Chat == nil}
		args := append([]any{seg, after + 1 + int64(i), []byte(m.Chat), errText, m.Agent, now.UnixMicro()}, convstore.Usage(m.Usage).Args()...)
		if _, err := tx.ExecContext(ctx, insertMessage, args...); err != nil {
			return err
		}
	}
	return nil
}

// insertMessage stores a message.
const insertMessage = `INSERT INTO robby_store_messages
	(segment, seq, chat, error, agent, created, ` + convstore.UsageColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// touch counts msgs and their usage in a conversation that holds after, and
// marks it updated. It returns the segment the conversation writes to.
func touch(ctx context.Context, tx stmtTx, user, id string, after int64, msgs []robby.Message, now time.Time) (int64, error) {
	var seg int64
	args := append([]any{len(msgs), now.UnixMicro()}, convstore.Usage(convstore.SumUsage(msgs, usageOf)).Args()...)
	// A count's sum stops at the largest int64. SQLite makes an integer sum
	// that overflows a REAL, which min brings back to the bound.
	err := tx.QueryRowContext(ctx, `UPDATE robby_store_conversations SET messages = messages + ?, updated = ?,
		prompt_tokens = min(prompt_tokens + ?, `+maxInt64+`), completion_tokens = min(completion_tokens + ?, `+maxInt64+`),
		total_tokens = min(total_tokens + ?, `+maxInt64+`), cached_prompt_tokens = min(cached_prompt_tokens + ?, `+maxInt64+`),
		reasoning_tokens = min(reasoning_tokens + ?, `+maxInt64+`), cost = cost + ?
		WHERE user_id = ? AND id = ? AND messages = ? RETURNING segment`, append(args, user, id, after)...).Scan(&seg)
	if !errors.Is(err, sql.ErrNoRows) {
		return seg, err
	}
	c, _, err := getConversation(ctx, tx, user, id)
	if err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("conversation %q holds %d messages, not %d: %w", id, c.Messages, after, robby.ErrConflict)
}

// List implements [robby.Store].
func (s *Store) List(ctx context.Context, user string, opts robby.ListOptions) ([]robby.Conversation, string, error) {
	cur, ok, err := convstore.DecodeCursor(opts.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := convstore.Limit(opts.Limit, robby.DefaultListLimit)
	defer s.readStmts.prepare(ctx) // after rows.Close
	var rows *sql.Rows
	if ok {
		rows, err = s.readStmts.query(ctx, `SELECT `+conversationColumns+` FROM robby_store_conversations
			WHERE user_id = ? AND (updated, id) < (?, ?) ORDER BY updated DESC, id DESC LIMIT ?`,
			user, cur.Updated.UnixMicro(), cur.ID, limit+1)
	} else {
		rows, err = s.readStmts.query(ctx, `SELECT `+conversationColumns+` FROM robby_store_conversations
			WHERE user_id = ? ORDER BY updated DESC, id DESC LIMIT ?`, user, limit+1)
	}
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var page []robby.Conversation
	for rows.Next() {
		c, err := scanConversation(rows)
		if err != nil {
			return nil, "", err
		}
		page = append(page, c)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	page, next := convstore.Page(page, limit, func(c robby.Conversation) convstore.Cursor {
		return convstore.Cursor{Updated: c.Updated, ID: c.ID}
	})
	return page, next, nil
}

// SetTitle implements [robby.Store].
func (s *Store) SetTitle(ctx context.Context, user, id, title string) error {
	return s.inTx(ctx, func(ctx context.Context, tx stmtTx) error {
		r, err := tx.ExecContext(ctx, `UPDATE robby_store_conversations SET title = ?, updated = ?
			WHERE user_id = ? AND id = ?`, title, convstore.Now().UnixMicro(), user, id)
		return checkFound(r, err, id)
	})
}

// SetMetadata implements [robby.Store].
func (s *Store) SetMetadata(ctx context.Context, user, id string, md map[string]string) error {
	return s.inTx(ctx, func(ctx context.Context, tx stmtTx) error {
		r, err := tx.ExecContext(ctx, `UPDATE robby_store_conversations SET metadata = ?, updated = ?
			WHERE user_id = ? AND id = ?`, convstore.EncodeMetadata(md), convstore.Now().UnixMicro(), user, id)
		return checkFound(r, err, id)
	})
}

// checkFound reports a statement that changed no conversation.
func checkFound(r sql.Result, err error, id string) error {
	if err != nil {
		return err
	}
	n, err := r.RowsAffected()
	if err == nil && n == 0 {
		err = fmt.Errorf("conversation %q: %w", id, robby.ErrNoConversation)
	}
	return err
}

// Fork implements [robby.Store]. The fork shares the first n messages
// with the conversation: it stores none of them again.
func (s *Store) Fork(ctx context.Context, c robby.Conversation, from string, n int64, msgs ...robby.Message) (robby.Conversation, error) {
	if err := checkMessages(msgs); err != nil {
		return robby.Conversation{}, err
	}
	if c.ID == "" {
		c.ID = convstore.NewID()
	}
	c.Messages, c.Usage = n, robby.Usage{}
	c.Metadata = maps.Clone(c.Metadata)
	c.Created = convstore.Now()
	c.Updated = c.Created
	err := s.inTx(ctx, func(ctx context.Context, tx stmtTx) error {
		src, seg, err := getConversation(ctx, tx, c.User, from)
		if err != nil {
			return err
		}
		if err := convstore.CheckFork(src.ID, src.Messages, n); err != nil {
			return err
		}
		parent, err := holder(ctx, tx, seg, n)
		if err != nil {
			return err
		}
		if c.Usage, err = usageUpTo(ctx, tx, src, parent, n); err != nil {
			return err
		}
		forkSeg, err := newSegment(ctx, tx, c.User, parent, n)
		if err != nil {
			return err
		}
		if err := insertConversation(ctx, tx, counted(c, msgs), forkSeg); err != nil {
			return err
		}
		return insertMessages(ctx, tx, forkSeg, n, msgs, c.Created)
	})
	if err != nil {
		return robby.Conversation{}, err
	}
	return counted(c, msgs), nil
}

// usageUpTo sums the usage of the first n messages of conversation src.
// Segment seg holds message n ([holder]).
func usageUpTo(ctx context.Context, tx stmtTx, src robby.Conversation, seg, n int64) (robby.Usage, error) {
	if n == src.Messages {
		return src.Usage, nil
	}
	var u robby.Usage
	err := tx.QueryRowContext(ctx, chain+`SELECT `+sumUsage+` FROM chain JOIN robby_store_messages m
		ON m.segment = chain.segment AND m.seq > chain.lo AND m.seq <= chain.hi`, n, seg).
		Scan((*convstore.Usage)(&u).Dest()...)
	return u, err
}

// Delete implements [robby.Store]. Messages that forks share stay until
// the last of those goes.
func (s *Store) Delete(ctx context.Context, user, id string) error {
	return s.inTx(ctx, func(ctx context.Context, tx stmtTx) error {
		var seg int64
		err := tx.QueryRowContext(ctx, `DELETE FROM robby_store_conversations WHERE user_id = ? AND id = ?
			RETURNING segment`, user, id).Scan(&seg)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("conversation %q: %w", id, robby.ErrNoConversation)
		}
		if err != nil {
			return err
		}
		return release(ctx, tx, seg)
	})
}
