package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Group commit. Every commit syncs the WAL to disk (synchronous=FULL), which
// takes milliseconds; one write at a time, a busy server's writes would queue
// behind each other's syncs. So one goroutine writes: it takes every write
// waiting when it is free (up to maxBatch) into one transaction, each write
// in a savepoint of its own, and commits them with one sync. A write that
// fails rolls back alone. Each caller returns once its write is on disk, or
// with its own error.

// maxBatch bounds the writes one transaction holds, so one commit's work
// stays short.
const maxBatch = 64

// errClosed reports a write asked of a closed store.
var errClosed = errors.New("sqlitestore: the store is closed")

// A write is one caller's transaction, waiting for the writer.
type write struct {
	ctx   context.Context
	f     func(context.Context, stmtTx) error
	state atomic.Int32 // pending, running or abandoned
	done  chan error   // the writer's answer, once running
}

const (
	pending int32 = iota
	running
	abandoned
)

// start marks the write taken by the writer. It reports false when the
// caller gave up first.
func (w *write) start() bool { return w.state.CompareAndSwap(pending, running) }

// inTx runs f in a write transaction, again while another process holds the
// database, until the context ends. f is given a context without the
// caller's cancellation: once f runs, it runs to its end, because SQLite,
// interrupted in a statement, would roll back the writes of others that
// share its transaction. A caller whose context ends before its write
// started returns at once, and the write never happens.
func (s *Store) inTx(ctx context.Context, f func(context.Context, stmtTx) error) error {
	if ctx.Err() != nil { // else select might pick the send as well
		return fmt.Errorf("waiting for the database: %w", context.Cause(ctx))
	}
	w := &write{ctx: ctx, f: f, done: make(chan error, 1)}
	s.queued.Add(1)
	select {
	case s.writes <- w:
		s.queued.Add(-1)
	case <-ctx.Done():
		s.queued.Add(-1)
		return fmt.Errorf("waiting for the database: %w", context.Cause(ctx))
	case <-s.closing:
		s.queued.Add(-1)
		return errClosed
	}
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		if w.state.CompareAndSwap(pending, abandoned) {
			return fmt.Errorf("waiting for the database: %w", context.Cause(ctx))
		}
		return <-w.done // it runs: its outcome is the truth
	}
}

// writeLoop is the writer: it commits the writes waiting, in batches, until
// the store closes.
func (s *Store) writeLoop() {
	defer close(s.stopped)
	for {
		var batch []*write
		select {
		case w := <-s.writes:
			batch = append(batch, w)
		case <-s.closing:
			return
		}
	fill:
		for len(batch) < maxBatch {
			select {
			case w := <-s.writes:
				batch = append(batch, w)
			default:
				break fill
			}
		}
		s.commit(batch)
		s.writeStmts.prepare(context.Background())
	}
}

// commit writes a batch, again while another process holds the database. A
// write whose caller gave up meanwhile is left out.
func (s *Store) commit(batch []*write) {
	for attempt := 0; ; attempt++ {
		batch = live(batch)
		if len(batch) == 0 {
			return
		}
		errs, err := s.tryBatch(batch)
		var lost *lostTx
		switch {
		case err == nil:
			for i, w := range batch {
				w.done <- errs[i]
			}
			return
		case errors.As(err, &lost):
			s.commitAlone(batch, lost)
			return
		case !isBusy(err) || s.stopping(attempt):
			for _, w := range batch {
				w.done <- err
			}
			return
		}
	}
}

// live returns the writes of batch whose callers still wait. A write whose
// context ended before it started is answered with that, and left out.
func live(batch []*write) []*write {
	kept := batch[:0]
	for _, w := range batch {
		switch {
		case w.state.Load() == running:
			kept = append(kept, w)
		case w.ctx.Err() != nil:
			if w.state.CompareAndSwap(pending, abandoned) {
				w.done <- fmt.Errorf("waiting for the database: %w", context.Cause(w.ctx))
			}
		case w.start():
			kept = append(kept, w)
		}
	}
	return kept
}

// stopping waits before the next attempt at a busy database, and reports
// true when the store closes meanwhile.
func (s *Store) stopping(attempt int) bool {
	backoff := min(time.Millisecond<<min(attempt, 7), 100*time.Millisecond)
	select {
	case <-s.closing:
		return true
	case <-time.After(backoff/2 + rand.N(backoff)):
		return false
	}
}

// A lostTx reports a write whose failure ended the whole transaction (as
// SQLite does on some errors), so its savepoint could not be rolled back.
type lostTx struct {
	i   int   // the write that failed
	err error // its error
}

func (e *lostTx) Error() string { return fmt.Sprintf("write %d ended the transaction: %v", e.i, e.err) }

// commitAlone answers the write that lost the transaction with its error and
// commits every other write of the batch in a transaction of its own.
func (s *Store) commitAlone(batch []*write, lost *lostTx) {
	for i, w := range batch {
		if i == lost.i {
			w.done <- lost.err
		} else {
			s.commit([]*write{w})
		}
	}
}

// tryBatch runs the writes of batch in one transaction, each in a savepoint,
// and commits it. It returns each write's error. A lone write needs no
// savepoint.
func (s *Store) tryBatch(batch []*write) ([]error, error) {
	wtx, err := s.write.BeginTx(context.Background(), nil)
	if err != nil {
		return nil, err
	}
	tx := stmtTx{wtx, s.writeStmts}
	errs := make([]error, len(batch))
	for i, w := range batch {
		if errs[i], err = run(tx, w, len(batch) > 1); err != nil {
			tx.Rollback()
			if errs[i] != nil && !isBusy(errs[i]) {
				return nil, &lostTx{i: i, err: errs[i]}
			}
			return nil, err
		}
	}
	if len(batch) == 1 && errs[0] != nil {
		tx.Rollback()
		return errs, nil
	}
	return errs, tx.Commit()
}

// run runs one write in tx, in a savepoint when asked. It returns the write's
// error, and an error that ends the transaction: a busy database, or a
// savepoint that could not be rolled back.
func run(tx stmtTx, w *write, savepoint bool) (werr, txErr error) {
	ctx := context.WithoutCancel(w.ctx)
	if !savepoint {
		werr = w.f(ctx, tx)
		if isBusy(werr) {
			return werr, werr
		}
		return werr, nil
	}
	if _, err := tx.ExecContext(ctx, `SAVEPOINT write`); err != nil {
		return nil, err
	}
	werr = w.f(ctx, tx)
	if isBusy(werr) {
		return werr, werr
	}
	if werr != nil {
		if _, err := tx.ExecContext(ctx, `ROLLBACK TO write`); err != nil {
			return werr, err
		}
	}
	if _, err := tx.ExecContext(ctx, `RELEASE write`); err != nil {
		return werr, err
	}
	return werr, nil
}
