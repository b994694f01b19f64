package sqlitestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/robby-go/robby"
	"github.com/stretchr/testify/require"
)

// openBlocked opens a store whose writer is held in a write until the
// returned func is called, so the writes asked meanwhile wait together.
func openBlocked(t *testing.T) (*Store, func()) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "w.db"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	_, err = s.write.ExecContext(ctx, `CREATE TABLE t (v TEXT)`)
	require.NoError(t, err)
	held, release := make(chan struct{}), make(chan struct{})
	go s.inTx(ctx, func(context.Context, stmtTx) error {
		close(held)
		<-release
		return nil
	})
	<-held
	return s, sync.OnceFunc(func() { close(release) })
}

// waiting reports whether n callers wait to hand the writer their writes.
func waiting(s *Store, n int) func() bool {
	return func() bool { return s.queued.Load() >= int32(n) }
}

// insert is a write adding v to table t, failing after it when fail is set.
func insert(v string, fail bool) func(context.Context, stmtTx) error {
	return func(ctx context.Context, tx stmtTx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (?)`, v); err != nil {
			return err
		}
		if fail {
			return fmt.Errorf("write %s fails", v)
		}
		return nil
	}
}

func rows(t *testing.T, s *Store) []string {
	t.Helper()
	rs, err := s.read.Query(`SELECT v FROM t ORDER BY v`)
	require.NoError(t, err)
	defer rs.Close()
	var vs []string
	for rs.Next() {
		var v string
		require.NoError(t, rs.Scan(&v))
		vs = append(vs, v)
	}
	require.NoError(t, rs.Err())
	return vs
}

// TestBatchedWriteFailsAlone puts ten writes in one batch, three of them
// failing after their insert: their inserts roll back, the others' commit,
// and each caller gets its own outcome.
func TestBatchedWriteFailsAlone(t *testing.T) {
	s, release := openBlocked(t)
	const n = 10
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = s.inTx(context.Background(), insert(fmt.Sprint(i), i%3 == 1)) })
	}
	require.Eventually(t, waiting(s, n), 5*time.Second, time.Millisecond)
	release()
	wg.Wait()
	for i, err := range errs {
		if i%3 == 1 {
			require.EqualError(t, err, fmt.Sprintf("write %d fails", i))
		} else {
			require.NoError(t, err)
		}
	}
	require.Equal(t, []string{"0", "2", "3", "5", "6", "8", "9"}, rows(t, s))
}

// TestAbandonedWriteNeverRuns cancels a write while it waits for the writer:
// its caller returns at once with the context's error, and it is never run.
func TestAbandonedWriteNeverRuns(t *testing.T) {
	s, release := openBlocked(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.inTx(ctx, insert("cancelled", false)) }()
	kept := make(chan error, 1)
	go func() { kept <- s.inTx(context.Background(), insert("kept", false)) }()
	require.Eventually(t, waiting(s, 2), 5*time.Second, time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled write waited for the writer")
	}
	release()
	require.NoError(t, <-kept)
	require.Equal(t, []string{"kept"}, rows(t, s))
}

// TestCloseFailsWaitingWrites closes the store while writes wait: they fail
// with errClosed, and Close returns once the write being run ends.
func TestCloseFailsWaitingWrites(t *testing.T) {
	s, release := openBlocked(t)
	done := make(chan error, 1)
	go func() { done <- s.inTx(context.Background(), insert("late", false)) }()
	require.Eventually(t, waiting(s, 1), 5*time.Second, time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	require.ErrorIs(t, <-done, errClosed)
	release()
	require.NoError(t, <-closed)
	require.True(t, errors.Is(s.inTx(context.Background(), insert("after", false)), errClosed))
	require.NoError(t, s.Close(), "a second Close")
}

// BenchmarkConcurrentWrites has 64 goroutines append a message each to
// conversations of their own: grouped as the writer groups them, and in
// turn (a mutex lets one write wait for the writer at a time, as before
// group commit). Each commit syncs to disk.
func BenchmarkConcurrentWrites(b *testing.B) {
	for _, mode := range []string{"in-turn", "grouped"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, filepath.Join(b.TempDir(), "b.db"))
			require.NoError(b, err)
			defer s.Close()
			var turn sync.Mutex
			b.SetParallelism(32) // 64 goroutines on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				c, err := s.Create(ctx, robby.Conversation{User: "u"})
				require.NoError(b, err)
				for n := int64(0); pb.Next(); n++ {
					if mode == "in-turn" {
						turn.Lock()
					}
					err := s.Append(ctx, "u", c.ID, n, robby.Message{Chat: json.RawMessage(`{"role":"user","content":"hi"}`)})
					if mode == "in-turn" {
						turn.Unlock()
					}
					require.NoError(b, err)
				}
			})
		})
	}
}
