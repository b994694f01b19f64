package robby_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/sqlitestore"
)

func openStore(t *testing.T) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "robby.db"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// roles returns the role of each stored message, "error" for an error
// record, with a tool message's content.
func stored(t *testing.T, s robby.Store, user, id string) []string {
	t.Helper()
	_, msgs, err := s.Load(context.Background(), user, id)
	require.NoError(t, err)
	var out []string
	for _, m := range msgs {
		if m.Chat == nil {
			out = append(out, "error: "+m.Error)
			continue
		}
		var v struct {
			Role      string
			Content   *string
			ToolCalls []struct{ Function struct{ Name string } } `json:"tool_calls"`
		}
		require.NoError(t, json.Unmarshal(m.Chat, &v))
		s := v.Role
		if v.Content != nil && *v.Content != "" {
			s += ": " + *v.Content
		}
		for _, c := range v.ToolCalls {
			s += " calls " + c.Function.Name
		}
		out = append(out, s)
	}
	return out
}

type sum struct{ A, B int }

func TestWithConversation(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	srv := robbytest.NewServer()
	defer srv.Close()
	var seenDuringCall []string
	add := robby.NewTool("add", "Add", func(ctx context.Context, in sum) (int, error) {
		seenDuringCall = stored(t, store, "alice", "c1")
		return in.A + in.B, nil
	})
	newAgent := func() *robby.Agent {
		a, err := robby.New(robby.WithBaseURL(srv.URL), robby.WithModel("m"), robby.WithSystem("Be brief."), robby.WithTools(add))
		require.NoError(t, err)
		t.Cleanup(func() { a.Close() })
		return a
	}

	srv.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"A":1,"B":2}`)), robbytest.Text("3"))
	res, err := newAgent().Run(ctx, "What is 1+2?", robby.WithConversation(store, "alice", "c1"))
	require.NoError(t, err)
	assert.Equal(t, "3", res.Text)
	assert.Equal(t, []string{"user: What is 1+2?", "assistant calls add"}, seenDuringCall,
		"the prompt and the call are saved before the tool runs")
	assert.Equal(t, []string{"user: What is 1+2?", "assistant calls add", "tool: 3", "assistant: 3"}, stored(t, store, "alice", "c1"))
	c, _, err := store.Load(ctx, "alice", "c1")
	require.NoError(t, err)
	assert.Equal(t, "What is 1+2?", c.Title)

	// A model failure is kept in the history, not sent to the model.
	srv.Reply(robbytest.Error(http.StatusBadRequest, `{"error":{"message":"overloaded"}}`))
	_, err = newAgent().Run(ctx, "And 2+2?", robby.WithConversation(store, "alice", "c1"))
	require.Error(t, err)
	hist := stored(t, store, "alice", "c1")
	require.Len(t, hist, 6)
	assert.Equal(t, "user: And 2+2?", hist[4])
	assert.Contains(t, hist[5], "error: ")
	assert.Contains(t, hist[5], "overloaded")

	// Another agent (another process, a replica) continues it.
	srv.Reply(robbytest.Text("4"))
	a := newAgent()
	_, err = a.Run(ctx, "2+2 then?", robby.WithConversation(store, "alice", "c1"))
	require.NoError(t, err)
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	var roles []string
	for _, m := range last.Messages {
		roles = append(roles, m.Role)
	}
	assert.Equal(t, []string{"system", "user", "assistant", "tool", "assistant", "user", "user"}, roles,
		"the system prompt, then the stored conversation without its error record")
	assert.Len(t, a.Messages(), 8, "the agent holds the conversation it ran")

	// Bob's conversation of the same ID is his own.
	srv.Reply(robbytest.Text("hi Bob"))
	_, err = newAgent().Run(ctx, "hello", robby.WithConversation(store, "bob", "c1"))
	require.NoError(t, err)
	assert.Equal(t, []string{"user: hello", "assistant: hi Bob"}, stored(t, store, "bob", "c1"))
	reqs = srv.Requests()
	assert.Len(t, reqs[len(reqs)-1].Messages, 2, "Bob's request holds none of Alice's messages")

	_, err = newAgent().Run(ctx, "x", robby.WithConversation(nil, "bob", "c1"))
	assert.Error(t, err)
}

// TestWithConversationResume starts from a conversation a crash cut after the
// assistant asked for two calls. The idempotent tool runs again, the other is
// reported interrupted, and the run goes on.
func TestWithConversationResume(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	_, err := store.Create(ctx, robby.Conversation{User: "u", ID: "c"})
	require.NoError(t, err)
	require.NoError(t, store.Append(ctx, "u", "c", 0,
		robby.Message{Chat: json.RawMessage(`{"role":"user","content":"look up and send"}`)},
		robby.Message{Chat: json.RawMessage(`{"role":"assistant","content":null,"tool_calls":[` +
			`{"id":"c1","type":"function","function":{"name":"lookup","arguments":"{\"A\":1,\"B\":1}"}},` +
			`{"id":"c2","type":"function","function":{"name":"send","arguments":"{\"A\":1,\"B\":1}"}}]}`)}))

	var lookups, sends atomic.Int32
	lookup := robby.NewTool("lookup", "Look up", func(ctx context.Context, in sum) (int, error) {
		lookups.Add(1)
		return 42, nil
	}).Idempotent()
	send := robby.NewTool("send", "Send", func(ctx context.Context, in sum) (string, error) {
		sends.Add(1)
		return "", errors.New("must not run twice")
	})
	srv := robbytest.NewServer()
	defer srv.Close()
	srv.Reply(robbytest.Text("Found 42; the sending was interrupted."))
	agent, err := robby.New(robby.WithBaseURL(srv.URL), robby.WithModel("m"), robby.WithTools(lookup, send))
	require.NoError(t, err)
	defer agent.Close()

	res, err := agent.Resume(ctx, robby.WithConversation(store, "u", "c"))
	require.NoError(t, err)
	assert.Equal(t, "Found 42; the sending was interrupted.", res.Text)
	assert.Equal(t, int32(1), lookups.Load())
	assert.Equal(t, int32(0), sends.Load())
	hist := stored(t, store, "u", "c")
	require.Len(t, hist, 5)
	assert.Equal(t, "tool: 42", hist[2])
	assert.Equal(t, "tool: Error: "+robby.ErrInterrupted.Error(), hist[3])
	msgs := srv.Requests()[0].Messages
	require.Len(t, msgs, 4)
	assert.Equal(t, "c2", msgs[3].ToolCallID)
	assert.Contains(t, msgs[3].Content, "interrupted")
}

// loadCounter is a store that counts its loads.
type loadCounter struct {
	robby.Store
	loads atomic.Int32
}

func (s *loadCounter) Load(ctx context.Context, user, id string) (robby.Conversation, []robby.Message, error) {
	s.loads.Add(1)
	return s.Store.Load(ctx, user, id)
}

func TestWithStoredConversation(t *testing.T) {
	ctx := context.Background()
	store := &loadCounter{Store: openStore(t)}
	srv := robbytest.NewServer()
	defer srv.Close()
	a, err := robby.New(robby.WithBaseURL(srv.URL), robby.WithModel("m"))
	require.NoError(t, err)
	defer a.Close()
	chat := func(role, text string) robby.Message {
		b, _ := json.Marshal(map[string]string{"role": role, "content": text})
		return robby.Message{Chat: b}
	}
	msgs := []robby.Message{chat("user", "Hi"), chat("assistant", "Hello"), chat("user", "Again?")}
	c, err := store.Create(ctx, robby.Conversation{User: "alice", ID: "c1"}, msgs...)
	require.NoError(t, err)

	srv.Reply(robbytest.Text("Again."))
	res, err := a.Clone().Resume(ctx, robby.WithStoredConversation(store, c, msgs))
	require.NoError(t, err)
	assert.Equal(t, "Again.", res.Text)
	assert.Zero(t, store.loads.Load(), "the run starts from the messages given, without loading them")
	reqs := srv.Requests()
	assert.Len(t, reqs[len(reqs)-1].Messages, 3, "the model reads the stored conversation")
	assert.Equal(t, []string{"user: Hi", "assistant: Hello", "user: Again?", "assistant: Again."}, stored(t, store, "alice", "c1"))

	// The same snapshot, now stale: the first save finds the conversation
	// changed, and stores nothing.
	srv.Reply(robbytest.Text("never stored"))
	_, err = a.Clone().Run(ctx, "More", robby.WithStoredConversation(store, c, msgs))
	assert.ErrorIs(t, err, robby.ErrConflict)
	assert.Len(t, stored(t, store, "alice", "c1"), 4)

	_, err = a.Clone().Run(ctx, "x", robby.WithStoredConversation(store, c, msgs[:1]))
	assert.Error(t, err, "messages that are not the conversation's count")
	_, err = a.Clone().Run(ctx, "x", robby.WithStoredConversation(nil, c, msgs))
	assert.Error(t, err)
}

// gatedStore is a store whose each Append waits for a token.
type gatedStore struct {
	robby.Store
	tokens  chan struct{}
	appends atomic.Int32
}

func (s *gatedStore) Append(ctx context.Context, user, id string, after int64, msgs ...robby.Message) error {
	s.appends.Add(1)
	select {
	case <-s.tokens:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Store.Append(ctx, user, id, after, msgs...)
}

// TestSavesOverlapTheRun holds each save until the test lets it through: the
// model reads the prompt while it is being saved, and the result of an
// idempotent tool while that is, and the run returns once all is stored. The
// saves made while one is written go together in the next write.
func TestSavesOverlapTheRun(t *testing.T) {
	ctx := context.Background()
	store := &gatedStore{Store: openStore(t), tokens: make(chan struct{})}
	srv := robbytest.NewServer()
	defer srv.Close()
	look := robby.NewTool("look", "Look", func(context.Context, struct{}) (string, error) { return "seen", nil }).Idempotent()
	a, err := robby.New(robby.WithBaseURL(srv.URL), robby.WithModel("m"), robby.WithTools(look))
	require.NoError(t, err)
	defer a.Close()
	srv.Reply(robbytest.ToolCalls(robbytest.Call("look", `{}`)), robbytest.Text("done"))
	done := make(chan error, 1)
	go func() {
		_, err := a.Run(ctx, "Look.", robby.WithConversation(store, "alice", "c1"))
		done <- err
	}()
	defer func() {
		close(store.tokens) // every save goes through
		require.NoError(t, <-done)
		assert.Equal(t, []string{"user: Look.", "assistant calls look", "tool: seen", "assistant: done"}, stored(t, store, "alice", "c1"))
		assert.LessOrEqual(t, store.appends.Load(), int32(3), "the saves made during a write go together in the next")
	}()
	waitUntil(t, func() bool { return len(srv.Requests()) == 2 })
	assert.Empty(t, stored(t, store, "alice", "c1"),
		"the model is asked, and reads the result, while the prompt, the call and the result wait to be saved")
	select {
	case err := <-done:
		done <- err // for the deferred check
		t.Fatalf("the run returned with a save under way: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
}

// waitUntil waits up to 10 s for cond.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
