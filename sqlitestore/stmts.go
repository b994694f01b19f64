package sqlitestore

import (
	"context"
	"database/sql"
	"sync"
)

// Statements are prepared once a connection and kept, not parsed again at
// each use: parsing SQL took a tenth of the store's CPU time under load.
// database/sql reuses a statement already prepared on a transaction's
// connection (Tx.StmtContext). A statement is prepared outside any
// transaction, since the writer's one connection is busy inside one. So a
// statement is first run unprepared, and prepared once the connection is
// free again: by the writer after its commit, by a reader after its read.

// A stmtCache holds the statements prepared on one database. It is safe for
// concurrent use.
type stmtCache struct {
	db      *sql.DB
	mu      sync.Mutex
	m       map[string]*sql.Stmt // nil: used, not yet prepared
	pending bool                 // m holds a nil
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, m: map[string]*sql.Stmt{}}
}

// get returns query's statement, or nil when it is not prepared yet: the
// next prepare prepares it. Once the cache is closed, it is always nil.
func (c *stmtCache) get(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.m[query]
	if !ok && c.m != nil {
		c.m[query], c.pending = nil, true
	}
	return st
}

// prepare prepares the statements used since the last time. The caller
// holds no connection of the database, so one is free. The cache is not
// locked while preparing: a caller in a transaction may wait for the lock,
// and the pool may be bounded. A statement that fails to prepare is tried
// again next time; meanwhile it runs unprepared, and reports its error
// itself.
func (c *stmtCache) prepare(ctx context.Context) {
	c.mu.Lock()
	var todo []string
	if c.pending {
		for q, st := range c.m {
			if st == nil {
				todo = append(todo, q)
			}
		}
		c.pending = false
	}
	c.mu.Unlock()
	for _, q := range todo {
		st, err := c.db.PrepareContext(ctx, q)
		c.mu.Lock()
		switch {
		case err != nil:
			c.pending = true
		case c.m == nil || c.m[q] != nil: // closed, or prepared by another caller
			st.Close()
		default:
			c.m[q] = st
		}
		c.mu.Unlock()
	}
}

// close closes the statements. The cache prepares none after.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		if st != nil {
			st.Close()
		}
	}
	c.m = nil
}

// A stmtTx is a transaction that runs the statements of its cache prepared.
type stmtTx struct {
	*sql.Tx
	cache *stmtCache
}

// stmt returns query's statement in the transaction, or nil.
func (tx stmtTx) stmt(ctx context.Context, query string) *sql.Stmt {
	if st := tx.cache.get(query); st != nil {
		return tx.StmtContext(ctx, st)
	}
	return nil
}

// ExecContext is [sql.Tx.ExecContext], prepared.
func (tx stmtTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := tx.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return tx.Tx.ExecContext(ctx, query, args...)
}

// QueryContext is [sql.Tx.QueryContext], prepared.
func (tx stmtTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := tx.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return tx.Tx.QueryContext(ctx, query, args...)
}

// QueryRowContext is [sql.Tx.QueryRowContext], prepared.
func (tx stmtTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := tx.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return tx.Tx.QueryRowContext(ctx, query, args...)
}

// query is [sql.DB.QueryContext] on the cache's database, prepared. The
// caller prepares the cache once the rows are closed: preparing takes a
// connection of the bounded pool, and the rows hold one.
func (c *stmtCache) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := c.get(query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return c.db.QueryContext(ctx, query, args...)
}

// queryRow is [sql.DB.QueryRowContext] on the cache's database, prepared.
// As with query, the caller prepares the cache once the row is scanned.
func (c *stmtCache) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st := c.get(query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return c.db.QueryRowContext(ctx, query, args...)
}
