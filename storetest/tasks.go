package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
)

// RunTasks checks a [robby.TaskStore]: tasks kept per user, updates that
// expect a version (concurrent ones, one wins), touches that keep it, and
// lists filtered and paged. open returns an empty store for one subtest,
// closed by t.Cleanup.
func RunTasks(t *testing.T, open func(t *testing.T) robby.TaskStore) {
	t.Run("PerUser", func(t *testing.T) { testTasksPerUser(t, open(t)) })
	t.Run("Versions", func(t *testing.T) { testTaskVersions(t, open(t)) })
	t.Run("List", func(t *testing.T) { testTaskList(t, open(t)) })
}

// task is a task of user's, its data naming it.
func task(user, id, contextID, state string) robby.Task {
	return robby.Task{ID: id, User: user, ContextID: contextID, State: state,
		Data: json.RawMessage(fmt.Sprintf(`{"id":%q,"state":%q}`, id, state))}
}

func testTasksPerUser(t *testing.T, s robby.TaskStore) {
	ctx := context.Background()
	before := time.Now().Add(-time.Second)
	require.NoError(t, s.CreateTask(ctx, task("ann", "t1", "c1", "working")))
	require.ErrorIs(t, s.CreateTask(ctx, task("ann", "t1", "c2", "working")), robby.ErrTaskExists)
	require.NoError(t, s.CreateTask(ctx, task("bob", "t1", "c9", "done")), "another user's ID is free")
	got, err := s.GetTask(ctx, "ann", "t1")
	require.NoError(t, err)
	assert.Equal(t, "c1", got.ContextID)
	assert.Equal(t, "working", got.State)
	assert.JSONEq(t, `{"id":"t1","state":"working"}`, string(got.Data))
	assert.Equal(t, int64(1), got.Version)
	assert.True(t, got.Created.After(before) && got.Updated.Equal(got.Created), "%v %v", got.Created, got.Updated)
	_, err = s.GetTask(ctx, "carl", "t1")
	assert.ErrorIs(t, err, robby.ErrNoTask)
	_, err = s.UpdateTask(ctx, task("carl", "t1", "c1", "done"), 1)
	assert.ErrorIs(t, err, robby.ErrNoTask)
	assert.ErrorIs(t, s.TouchTask(ctx, "carl", "t1"), robby.ErrNoTask)
}

func testTaskVersions(t *testing.T, s robby.TaskStore) {
	ctx := context.Background()
	require.NoError(t, s.CreateTask(ctx, task("ann", "t", "c", "working")))
	v, err := s.UpdateTask(ctx, task("ann", "t", "c", "done"), 1)
	require.NoError(t, err)
	assert.Equal(t, int64(2), v)
	_, err = s.UpdateTask(ctx, task("ann", "t", "c", "failed"), 1)
	assert.ErrorIs(t, err, robby.ErrConflict)
	before, err := s.GetTask(ctx, "ann", "t")
	require.NoError(t, err)
	assert.Equal(t, "done", before.State)
	time.Sleep(2 * time.Millisecond)
	require.NoError(t, s.TouchTask(ctx, "ann", "t"))
	after, err := s.GetTask(ctx, "ann", "t")
	require.NoError(t, err)
	assert.Equal(t, int64(2), after.Version, "a touch keeps the version")
	assert.True(t, after.Updated.After(before.Updated))

	var wins sync.WaitGroup
	won := make(chan int, 8)
	for i := range 8 {
		wins.Go(func() {
			if _, err := s.UpdateTask(ctx, task("ann", "t", "c", fmt.Sprint("s", i)), 2); err == nil {
				won <- i
			} else {
				assert.ErrorIs(t, err, robby.ErrConflict)
			}
		})
	}
	wins.Wait()
	close(won)
	assert.Len(t, won, 1, "of updates expecting one version, one wins")
}

func testTaskList(t *testing.T, s robby.TaskStore) {
	ctx := context.Background()
	for i := range 5 {
		state := "done"
		if i%2 == 0 {
			state = "working"
		}
		require.NoError(t, s.CreateTask(ctx, task("ann", fmt.Sprint("t", i), fmt.Sprint("c", i%2), state)))
		time.Sleep(2 * time.Millisecond)
	}
	require.NoError(t, s.CreateTask(ctx, task("bob", "tb", "c0", "working")))
	var ids []string
	cursor := ""
	for {
		page, err := s.ListTasks(ctx, "ann", robby.TaskListOptions{Limit: 2, Cursor: cursor})
		require.NoError(t, err)
		assert.Equal(t, 5, page.Total)
		for _, tk := range page.Tasks {
			ids = append(ids, tk.ID)
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	assert.Equal(t, []string{"t4", "t3", "t2", "t1", "t0"}, ids, "the last updated first, each once")
	page, err := s.ListTasks(ctx, "ann", robby.TaskListOptions{ContextID: "c0", State: "working"})
	require.NoError(t, err)
	assert.Equal(t, 3, page.Total)
	t2, err := s.GetTask(ctx, "ann", "t2")
	require.NoError(t, err)
	page, err = s.ListTasks(ctx, "ann", robby.TaskListOptions{UpdatedAfter: t2.Updated})
	require.NoError(t, err)
	assert.Equal(t, 3, page.Total, "t2, t3 and t4 were updated since t2")
	_, err = s.ListTasks(ctx, "ann", robby.TaskListOptions{Cursor: "not a cursor"})
	assert.Error(t, err)
}
