package sqlitestore

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
)

// TestReadersShareABoundedPool has many more readers than connections read
// at once, each reading every way, on a store whose statements are not
// prepared yet: none waits forever for a connection (the statement cache
// prepares while readers hold them), each reads what was written, and no
// connection is opened only to be closed again.
func TestReadersShareABoundedPool(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "r.db"))
	require.NoError(t, err)
	defer s.Close()
	c, err := s.Create(ctx, robby.Conversation{User: "u", Title: "t"}, robby.Message{Chat: json.RawMessage(`{"role":"user","content":"hi"}`)})
	require.NoError(t, err)
	require.NoError(t, s.CreateTask(ctx, robby.Task{ID: "k", User: "u", State: "working", Data: json.RawMessage(`{}`)}))
	_, err = s.AddCount(ctx, "u", "requests", time.Unix(0, 0), 3)
	require.NoError(t, err)

	var wg sync.WaitGroup
	errs := make(chan error, 8*readers())
	for range 8 * readers() {
		wg.Go(func() { errs <- readAll(ctx, s, c.ID) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	st := s.read.Stats()
	require.LessOrEqual(t, st.MaxOpenConnections, readers())
	require.Zero(t, st.MaxIdleClosed, "connections closed for want of room to keep them")
}

// readAll reads conversation id, its list, the task and the count, checking
// what each holds.
func readAll(ctx context.Context, s *Store, id string) error {
	_, msgs, err := s.Load(ctx, "u", id)
	if err == nil && len(msgs) != 1 {
		err = fmt.Errorf("Load: %d messages, not 1", len(msgs))
	}
	if err != nil {
		return err
	}
	if page, _, err := s.List(ctx, "u", robby.ListOptions{}); err != nil || len(page) != 1 {
		return fmt.Errorf("List: %d conversations, %v", len(page), err)
	}
	if _, err := s.GetTask(ctx, "u", "k"); err != nil {
		return err
	}
	if page, err := s.ListTasks(ctx, "u", robby.TaskListOptions{}); err != nil || page.Total != 1 {
		return fmt.Errorf("ListTasks: %d tasks, %v", page.Total, err)
	}
	if n, err := s.AddCount(ctx, "u", "requests", time.Unix(0, 0), 0); err != nil || n != 3 {
		return fmt.Errorf("AddCount: %d, %v", n, err)
	}
	return nil
}
