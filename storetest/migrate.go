package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
)

// CheckMigrated checks a store opened on a database held by an earlier version
// of its schema. Three conversations were written there. They are alice's "c"
// (a user message "a1", then the error "failed"), bob's "c" ("b1") and alice's
// "fork" ("a1"). They load as they were, and fork, take messages and go like
// new ones. Their usage starts at zero and counts what is appended. Robby's
// stores check each migration of their schema with it.
func CheckMigrated(t *testing.T, s robby.Store) {
	t.Helper()
	ctx := context.Background()
	c, msgs := load(t, s, "alice", "c")
	assert.Equal(t, "Alice's", c.Title)
	assert.Equal(t, []string{"a1", "error: failed"}, msgs)
	assert.Equal(t, robby.Usage{}, c.Usage)
	_, msgs = load(t, s, "bob", "c")
	assert.Equal(t, []string{"b1"}, msgs)

	f, err := s.Fork(ctx, robby.Conversation{User: "alice"}, "c", 1)
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, "alice", "c"))
	require.NoError(t, s.Append(ctx, "alice", f.ID, 1, Chat("again"), answer("yes", usageOf(8))))
	f, msgs = load(t, s, "alice", f.ID)
	assert.Equal(t, []string{"a1", "again", "yes"}, msgs)
	assert.Equal(t, sum(8), f.Usage)
	create(t, s, "bob", "new", "")
	require.NoError(t, s.Append(ctx, "bob", "new", 0, Chat("x")))
	_, msgs = load(t, s, "bob", "c")
	assert.Equal(t, []string{"b1"}, msgs, "a new conversation writes apart from migrated ones")
	_, msgs = load(t, s, "alice", "fork")
	assert.Equal(t, []string{"a1"}, msgs)
	if ts, ok := s.(robby.TaskStore); ok { // since version 7
		require.NoError(t, ts.CreateTask(ctx, robby.Task{ID: "t", User: "alice", ContextID: "c", State: "working", Data: []byte(`{}`)}))
		task, err := ts.GetTask(ctx, "alice", "t")
		require.NoError(t, err)
		assert.Equal(t, "working", task.State)
	}
}
