// Package storetest holds the tests every [robby.Store] must pass. Robby's
// own stores run them; run them against yours:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) robby.Store {
//			return openMyStore(t) // empty, closed by t.Cleanup
//		})
//	}
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/robby-go/robby"
)

// Run runs the suite as subtests of t. open returns an empty store for
// one subtest; it closes the store when the subtest ends (t.Cleanup).
func Run(t *testing.T, open func(t *testing.T) robby.Store) {
	tests := []struct {
		name string
		f    func(*testing.T, robby.Store)
	}{
		{"CreateLoad", testCreateLoad},
		{"Append", testAppend},
		{"Conflict", testConflict},
		{"Users", testUsers},
		{"List", testList},
		{"Fork", testFork},
		{"ForkWith", testForkWith},
		{"ForkChain", testForkChain},
		{"ConcurrentForkDelete", testConcurrentForkDelete},
		{"TitleDelete", testTitleDelete},
		{"Metadata", testMetadata},
		{"Usage", testUsage},
		{"UsageSaturates", testUsageSaturates},
		{"Agents", testAgents},
		{"BadInput", testBadInput},
		{"Concurrent", testConcurrent},
		{"ConcurrentOneConversation", testConcurrentOne},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.f(t, open(t)) })
	}
}

// Chat returns a user message as a store keeps it.
func Chat(text string) robby.Message {
	b, err := json.Marshal(map[string]string{"role": "user", "content": text})
	if err != nil {
		panic(err)
	}
	return robby.Message{Chat: b}
}

// ForkChain makes a chain of k conversations of user, as a server of stored
// responses does. Each forks the last at its end and adds a question and an
// answer. It returns the last one's ID. A store that shares forked messages
// stores 2k of them, not k(k+1).
func ForkChain(t testing.TB, s robby.Store, user string, k int) string {
	t.Helper()
	return ForkChainSized(t, s, user, k, 0)
}

// ForkChainSized is [ForkChain] with messages of at least size bytes of text
// each, as real prompts and answers are. A store's size on disk is measured
// with it.
func ForkChainSized(t testing.TB, s robby.Store, user string, k, size int) string {
	t.Helper()
	pad := strings.Repeat(".", size)
	ctx := context.Background()
	c, err := s.Create(ctx, robby.Conversation{User: user})
	require.NoError(t, err)
	for i := range k {
		if i > 0 {
			if c, err = s.Fork(ctx, robby.Conversation{User: user}, c.ID, c.Messages); err != nil {
				require.NoError(t, err)
			}
		}
		require.NoError(t, s.Append(ctx, user, c.ID, c.Messages, Chat(fmt.Sprint("q", i, pad)), Chat(fmt.Sprint("a", i, pad))))
		c.Messages += 2
	}
	return c.ID
}

// texts returns the contents of messages made by Chat, and the errors.
func texts(t *testing.T, msgs []robby.Message) []string {
	t.Helper()
	var out []string
	for i, m := range msgs {
		require.Equal(t, int64(i+1), m.Seq, "messages numbered from 1 in order")
		require.False(t, m.Created.IsZero(), "message %d has its time", m.Seq)
		if m.Chat == nil {
			out = append(out, "error: "+m.Error)
			continue
		}
		var v struct{ Content string }
		require.NoError(t, json.Unmarshal(m.Chat, &v))
		out = append(out, v.Content)
	}
	return out
}

func create(t *testing.T, s robby.Store, user, id, title string) robby.Conversation {
	t.Helper()
	c, err := s.Create(context.Background(), robby.Conversation{User: user, ID: id, Title: title})
	require.NoError(t, err)
	return c
}

func load(t *testing.T, s robby.Store, user, id string) (robby.Conversation, []string) {
	t.Helper()
	c, msgs, err := s.Load(context.Background(), user, id)
	require.NoError(t, err)
	require.Equal(t, c.Messages, int64(len(msgs)), "the count matches the messages")
	return c, texts(t, msgs)
}

func testCreateLoad(t *testing.T, s robby.Store) {
	ctx := context.Background()
	before := time.Now().Add(-time.Second)
	c := create(t, s, "alice", "chat-1", "First chat")
	assert.Equal(t, robby.Conversation{ID: "chat-1", User: "alice", Title: "First chat", Created: c.Created, Updated: c.Created}, c)
	assert.WithinDuration(t, time.Now(), c.Created, time.Until(before.Add(2*time.Second)))

	got, msgs := load(t, s, "alice", "chat-1")
	assert.Empty(t, msgs)
	assert.Equal(t, c.ID, got.ID)
	assert.Equal(t, c.Title, got.Title)
	assert.True(t, c.Created.Equal(got.Created), "created %v, loaded %v", c.Created, got.Created)

	_, err := s.Create(ctx, robby.Conversation{User: "alice", ID: "chat-1"})
	assert.ErrorIs(t, err, robby.ErrConversationExists)

	a, b := create(t, s, "alice", "", ""), create(t, s, "alice", "", "")
	assert.NotEmpty(t, a.ID)
	assert.NotEqual(t, a.ID, b.ID, "IDs picked by the store differ")

	_, _, err = s.Load(ctx, "alice", "nope")
	assert.ErrorIs(t, err, robby.ErrNoConversation)
}

func testAppend(t *testing.T, s robby.Store) {
	ctx := context.Background()
	c := create(t, s, "", "c", "")
	require.NoError(t, s.Append(ctx, "", "c", 0, Chat("one"), Chat("two")))
	require.NoError(t, s.Append(ctx, "", "c", 2, robby.Message{Error: "model unreachable"}))
	big := string(make([]byte, 1<<20))
	require.NoError(t, s.Append(ctx, "", "c", 3, Chat("three"), Chat(big)))
	got, msgs := load(t, s, "", "c")
	assert.Equal(t, []string{"one", "two", "error: model unreachable", "three", big}, msgs)
	assert.Equal(t, int64(5), got.Messages)
	assert.False(t, got.Updated.Before(c.Updated), "updated %v after created %v", got.Updated, c.Created)

	// The chat JSON comes back as it went in, byte for byte.
	raw := json.RawMessage(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"b\":1,\"a\":2}"}}]}`)
	require.NoError(t, s.Append(ctx, "", "c", 5, robby.Message{Chat: raw}))
	_, all, err := s.Load(ctx, "", "c")
	require.NoError(t, err)
	assert.Equal(t, string(raw), string(all[5].Chat))

	err = s.Append(ctx, "", "missing", 0, Chat("x"))
	assert.ErrorIs(t, err, robby.ErrNoConversation)
}

func testConflict(t *testing.T, s robby.Store) {
	ctx := context.Background()
	create(t, s, "u", "c", "")
	require.NoError(t, s.Append(ctx, "u", "c", 0, Chat("one")))
	for _, after := range []int64{0, 2, -1} {
		err := s.Append(ctx, "u", "c", after, Chat("lost"), Chat("lost too"))
		assert.ErrorIs(t, err, robby.ErrConflict, "append after %d", after)
	}
	// A write retried after it landed is refused: nothing twice.
	require.NoError(t, s.Append(ctx, "u", "c", 1, Chat("two")))
	assert.ErrorIs(t, s.Append(ctx, "u", "c", 1, Chat("two")), robby.ErrConflict)
	_, msgs := load(t, s, "u", "c")
	assert.Equal(t, []string{"one", "two"}, msgs)
}

func testUsers(t *testing.T, s robby.Store) {
	ctx := context.Background()
	create(t, s, "alice", "same", "Alice's")
	create(t, s, "bob", "same", "Bob's")
	create(t, s, "alice", "private", "secret")
	require.NoError(t, s.Append(ctx, "alice", "private", 0, Chat("alice's secret")))
	require.NoError(t, s.Append(ctx, "bob", "same", 0, Chat("bob's")))

	_, _, err := s.Load(ctx, "bob", "private")
	assert.ErrorIs(t, err, robby.ErrNoConversation)
	assert.ErrorIs(t, s.Append(ctx, "bob", "private", 1, Chat("intrusion")), robby.ErrNoConversation)
	assert.ErrorIs(t, s.SetTitle(ctx, "bob", "private", "mine"), robby.ErrNoConversation)
	_, err = s.Fork(ctx, robby.Conversation{User: "bob"}, "private", 1)
	assert.ErrorIs(t, err, robby.ErrNoConversation)
	assert.ErrorIs(t, s.Delete(ctx, "bob", "private"), robby.ErrNoConversation)
	_, _, err = s.Load(ctx, "", "private")
	assert.ErrorIs(t, err, robby.ErrNoConversation, "the empty user is a user like another")

	page, _, err := s.List(ctx, "bob", robby.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, "Bob's", page[0].Title)

	c, msgs := load(t, s, "alice", "private")
	assert.Equal(t, "secret", c.Title)
	assert.Equal(t, []string{"alice's secret"}, msgs)
	_, msgs = load(t, s, "alice", "same")
	assert.Empty(t, msgs)
	_, msgs = load(t, s, "bob", "same")
	assert.Equal(t, []string{"bob's"}, msgs)
}

func testList(t *testing.T, s robby.Store) {
	ctx := context.Background()
	const n = 25
	for i := range n {
		create(t, s, "u", fmt.Sprintf("c%02d", i), "")
	}
	create(t, s, "other", "x", "")
	// Touch them in an order of our own: c07 last, so first.
	order := []string{}
	for i := range n {
		id := fmt.Sprintf("c%02d", (i*7+1)%n)
		time.Sleep(time.Millisecond) // distinct times, with the ID breaking ties anyway
		require.NoError(t, s.SetTitle(ctx, "u", id, "touched"))
		order = slices.Insert(order, 0, id)
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 5, "paging ends")
		page, next, err := s.List(ctx, "u", robby.ListOptions{Limit: 10, Cursor: cursor})
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), 10)
		for i, c := range page {
			got = append(got, c.ID)
			if i > 0 {
				assert.False(t, c.Updated.After(page[i-1].Updated), "newest first")
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	assert.Equal(t, order, got)

	all, next, err := s.List(ctx, "u", robby.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, all, n, "the default page holds them all")
	assert.Empty(t, next)

	_, _, err = s.List(ctx, "u", robby.ListOptions{Cursor: "not a cursor"})
	assert.Error(t, err)

	none, next, err := s.List(ctx, "nobody", robby.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, none)
	assert.Empty(t, next)
}

func testFork(t *testing.T, s robby.Store) {
	ctx := context.Background()
	create(t, s, "u", "src", "Trip")
	require.NoError(t, s.Append(ctx, "u", "src", 0, Chat("a"), Chat("b"), robby.Message{Error: "e"}, Chat("c"), Chat("d")))

	fork, err := s.Fork(ctx, robby.Conversation{User: "u", Title: "Detour"}, "src", 3)
	require.NoError(t, err)
	assert.NotEqual(t, "src", fork.ID)
	assert.Equal(t, "u", fork.User)
	assert.Equal(t, "Detour", fork.Title, "the fork's title is the one given")
	assert.Equal(t, int64(3), fork.Messages)
	_, msgs := load(t, s, "u", fork.ID)
	assert.Equal(t, []string{"a", "b", "error: e"}, msgs)

	require.NoError(t, s.Append(ctx, "u", fork.ID, 3, Chat("other way")))
	_, msgs = load(t, s, "u", fork.ID)
	assert.Equal(t, []string{"a", "b", "error: e", "other way"}, msgs)
	_, msgs = load(t, s, "u", "src")
	assert.Equal(t, []string{"a", "b", "error: e", "c", "d"}, msgs, "the original is left as it was")

	empty, err := s.Fork(ctx, robby.Conversation{User: "u"}, "src", 0)
	require.NoError(t, err)
	_, msgs = load(t, s, "u", empty.ID)
	assert.Empty(t, msgs)

	_, err = s.Fork(ctx, robby.Conversation{User: "u"}, "src", 6)
	assert.Error(t, err, "fork past the end")
	_, err = s.Fork(ctx, robby.Conversation{User: "u"}, "missing", 0)
	assert.ErrorIs(t, err, robby.ErrNoConversation)
}

// testForkWith forks with the new conversation's ID and metadata and its
// first messages, in one write, and creates a conversation with messages.
func testForkWith(t *testing.T, s robby.Store) {
	ctx := context.Background()
	md := map[string]string{"response": "r1"}
	src, err := s.Create(ctx, robby.Conversation{User: "u", ID: "src", Title: "T"},
		Chat("a"), robby.Message{Chat: Chat("b").Chat, Usage: robby.Usage{PromptTokens: 3, TotalTokens: 3}})
	require.NoError(t, err)
	assert.Equal(t, int64(2), src.Messages, "created with its messages")
	assert.Equal(t, int64(3), src.Usage.TotalTokens)
	_, msgs := load(t, s, "u", "src")
	assert.Equal(t, []string{"a", "b"}, msgs)

	in := []robby.Message{Chat("c"), {Chat: Chat("d").Chat, Agent: "pricing", Usage: robby.Usage{TotalTokens: 4}}}
	fork, err := s.Fork(ctx, robby.Conversation{User: "u", ID: "next", Title: "m", Metadata: md}, "src", 2, in...)
	require.NoError(t, err)
	assert.Equal(t, "next", fork.ID)
	assert.Equal(t, int64(4), fork.Messages)
	assert.Equal(t, int64(7), fork.Usage.TotalTokens, "the shared messages' usage and the new ones'")
	got, all, err := s.Load(ctx, "u", "next")
	require.NoError(t, err)
	assert.Equal(t, "m", got.Title)
	assert.Equal(t, md, got.Metadata)
	assert.Equal(t, int64(7), got.Usage.TotalTokens)
	require.Len(t, all, 4)
	assert.Equal(t, "pricing", all[3].Agent)
	_, msgs = load(t, s, "u", "next")
	assert.Equal(t, []string{"a", "b", "c", "d"}, msgs)
	require.NoError(t, s.Append(ctx, "u", "next", 4, Chat("e")), "a fork goes on from its count")

	_, err = s.Fork(ctx, robby.Conversation{User: "u", ID: "next"}, "src", 1, Chat("x"))
	assert.ErrorIs(t, err, robby.ErrConversationExists)
	_, err = s.Fork(ctx, robby.Conversation{User: "bob"}, "src", 1)
	assert.ErrorIs(t, err, robby.ErrNoConversation, "another user's conversation is not found")
	_, err = s.Create(ctx, robby.Conversation{User: "u", ID: "bad"}, robby.Message{})
	assert.Error(t, err, "a message with neither chat nor error")
	_, _, err = s.Load(ctx, "u", "bad")
	assert.ErrorIs(t, err, robby.ErrNoConversation, "nothing stored of a refused create")
	_, msgs = load(t, s, "u", "src")
	assert.Equal(t, []string{"a", "b"}, msgs, "the original is left as it was")
}

// testForkChain forks forks, at their end and inside what they share. It
// deletes conversations that forks continue: no fork loses a message.
func testForkChain(t *testing.T, s robby.Store) {
	ctx := context.Background()
	create(t, s, "u", "a", "Trip")
	require.NoError(t, s.Append(ctx, "u", "a", 0, Chat("a1"), Chat("a2")))
	fork := func(id string, n int64, add ...string) string {
		t.Helper()
		first := make([]robby.Message, 0, 1) // the first new message in the fork's own write
		if len(add) > 0 {
			first = append(first, Chat(add[0]))
		}
		f, err := s.Fork(ctx, robby.Conversation{User: "u"}, id, n, first...)
		require.NoError(t, err)
		for i, text := range add[len(first):] {
			require.NoError(t, s.Append(ctx, "u", f.ID, n+int64(len(first)+i), Chat(text)))
		}
		return f.ID
	}
	b := fork("a", 2, "b3")
	c := fork(b, 3, "c4", "c5")
	d := fork(c, 2, "d3")                                      // inside what c shares with a
	e := fork(c, 4, "e5")                                      // inside what c shares with b, and its own
	f := fork(e, 5, "f6")                                      // a fork of a fork of a fork
	g := fork(c, 0, "g1")                                      // nothing shared
	require.NoError(t, s.Append(ctx, "u", "a", 2, Chat("a3"))) // the parent goes on
	want := map[string][]string{
		"a": {"a1", "a2", "a3"},
		b:   {"a1", "a2", "b3"},
		c:   {"a1", "a2", "b3", "c4", "c5"},
		d:   {"a1", "a2", "d3"},
		e:   {"a1", "a2", "b3", "c4", "e5"},
		f:   {"a1", "a2", "b3", "c4", "e5", "f6"},
		g:   {"g1"},
	}
	check := func() {
		t.Helper()
		for id, texts := range want {
			_, msgs := load(t, s, "u", id)
			assert.Equal(t, texts, msgs, id)
		}
	}
	check()

	// Deleting a conversation that forks continue keeps their messages. First
	// in the middle of the chain, then its root, then a tip.
	for _, id := range []string{b, "a", e} {
		require.NoError(t, s.Delete(ctx, "u", id))
		delete(want, id)
		_, _, err := s.Load(ctx, "u", id)
		assert.ErrorIs(t, err, robby.ErrNoConversation)
		check()
	}
	_, err := s.Fork(ctx, robby.Conversation{User: "u"}, b, 1)
	assert.ErrorIs(t, err, robby.ErrNoConversation, "a deleted conversation cannot be forked")

	// The survivors go on, and fork again, over what the deleted held.
	require.NoError(t, s.Append(ctx, "u", c, 5, Chat("c6")))
	want[c] = append(want[c], "c6")
	h := fork(f, 3, "h4")
	want[h] = []string{"a1", "a2", "b3", "h4"}
	check()

	// The deleted root's ID is free again, and starts empty; another user
	// sees none of it.
	create(t, s, "u", "a", "again")
	want["a"] = nil
	check()
	_, _, err = s.Load(ctx, "other", c)
	assert.ErrorIs(t, err, robby.ErrNoConversation)

	for id := range want {
		require.NoError(t, s.Delete(ctx, "u", id))
	}
	page, _, err := s.List(ctx, "u", robby.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, page)
}

// testConcurrentForkDelete forks a conversation from many goroutines. Each
// continues its fork, forks that and deletes its own. Meanwhile the original is
// deleted, once all forked it. Every survivor holds its messages.
func testConcurrentForkDelete(t *testing.T, s robby.Store) {
	ctx := context.Background()
	create(t, s, "u", "root", "")
	require.NoError(t, s.Append(ctx, "u", "root", 0, Chat("r1"), Chat("r2"), Chat("r3")))
	const workers = 8
	kept := make([]string, workers)
	var g errgroup.Group
	var forked sync.WaitGroup
	forked.Add(workers)
	for w := range workers {
		g.Go(func() error {
			f, err := s.Fork(ctx, robby.Conversation{User: "u"}, "root", int64(1+w%3))
			forked.Done()
			if err != nil {
				return err
			}
			if err := s.Append(ctx, "u", f.ID, f.Messages, Chat(fmt.Sprint("w", w))); err != nil {
				return err
			}
			again, err := s.Fork(ctx, robby.Conversation{User: "u"}, f.ID, f.Messages+1)
			if err != nil {
				return err
			}
			kept[w] = again.ID
			return s.Delete(ctx, "u", f.ID)
		})
	}
	g.Go(func() error {
		forked.Wait()
		return s.Delete(ctx, "u", "root")
	})
	require.NoError(t, g.Wait())
	for w, id := range kept {
		_, msgs := load(t, s, "u", id)
		want := append([]string{"r1", "r2", "r3"}[:1+w%3], fmt.Sprint("w", w))
		assert.Equal(t, want, msgs, "worker %d", w)
	}
}

func testTitleDelete(t *testing.T, s robby.Store) {
	ctx := context.Background()
	c := create(t, s, "u", "c", "old")
	require.NoError(t, s.Append(ctx, "u", "c", 0, Chat("hello")))
	time.Sleep(2 * time.Millisecond)
	require.NoError(t, s.SetTitle(ctx, "u", "c", "new"))
	got, _ := load(t, s, "u", "c")
	assert.Equal(t, "new", got.Title)
	assert.True(t, got.Updated.After(c.Updated), "setting the title updates")
	assert.ErrorIs(t, s.SetTitle(ctx, "u", "missing", "x"), robby.ErrNoConversation)

	require.NoError(t, s.Delete(ctx, "u", "c"))
	_, _, err := s.Load(ctx, "u", "c")
	assert.ErrorIs(t, err, robby.ErrNoConversation)
	assert.ErrorIs(t, s.Delete(ctx, "u", "c"), robby.ErrNoConversation)
	page, _, err := s.List(ctx, "u", robby.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, page)

	// The ID can be used again, and starts empty.
	create(t, s, "u", "c", "again")
	_, msgs := load(t, s, "u", "c")
	assert.Empty(t, msgs)
}

func testMetadata(t *testing.T, s robby.Store) {
	ctx := context.Background()
	md := map[string]string{"model": "m", "settings": `{"temperature":0.5}`, "": "empty key", "é": "ü\n"}
	c, err := s.Create(ctx, robby.Conversation{User: "u", ID: "c", Metadata: md})
	require.NoError(t, err)
	assert.Equal(t, md, c.Metadata)
	got, _ := load(t, s, "u", "c")
	assert.Equal(t, md, got.Metadata)
	page, _, err := s.List(ctx, "u", robby.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, md, page[0].Metadata)

	fork, err := s.Fork(ctx, robby.Conversation{User: "u", Metadata: md}, "c", 0)
	require.NoError(t, err)
	assert.Equal(t, md, fork.Metadata, "a fork has the metadata given")
	time.Sleep(2 * time.Millisecond)
	require.NoError(t, s.SetMetadata(ctx, "u", "c", map[string]string{"status": "done"}))
	got, _ = load(t, s, "u", "c")
	assert.Equal(t, map[string]string{"status": "done"}, got.Metadata, "replaced")
	assert.True(t, got.Updated.After(c.Updated), "setting the metadata updates")
	got, _ = load(t, s, "u", fork.ID)
	assert.Equal(t, md, got.Metadata, "the fork's are its own")

	require.NoError(t, s.SetMetadata(ctx, "u", "c", nil))
	got, _ = load(t, s, "u", "c")
	assert.Nil(t, got.Metadata)
	assert.ErrorIs(t, s.SetMetadata(ctx, "other", "c", md), robby.ErrNoConversation)
	assert.ErrorIs(t, s.SetMetadata(ctx, "u", "missing", md), robby.ErrNoConversation)
}

func testBadInput(t *testing.T, s robby.Store) {
	ctx := context.Background()
	create(t, s, "u", "c", "")
	for name, m := range map[string]robby.Message{
		"empty":         {},
		"both":          {Chat: json.RawMessage(`{"role":"user","content":"x"}`), Error: "e"},
		"not JSON":      {Chat: json.RawMessage(`{"role":`)},
		"not an object": {Chat: json.RawMessage(`"text"`)},
	} {
		err := s.Append(ctx, "u", "c", 0, Chat("fine"), m)
		assert.Error(t, err, name)
	}
	_, msgs := load(t, s, "u", "c")
	assert.Empty(t, msgs, "a refused append stores nothing")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	assert.Error(t, s.Append(cancelled, "u", "c", 0, Chat("x")))
	_, msgs = load(t, s, "u", "c")
	assert.Empty(t, msgs)
}

// testConcurrent has many conversations written at once, each by its own
// goroutine, and read while they are.
func testConcurrent(t *testing.T, s robby.Store) {
	ctx := context.Background()
	const convs, turns = 40, 15
	var g errgroup.Group
	for i := range convs {
		id := fmt.Sprintf("c%d", i)
		create(t, s, "u", id, "")
		g.Go(func() error {
			for turn := range turns {
				if err := s.Append(ctx, "u", id, int64(turn*2), Chat(fmt.Sprint(turn)), Chat(id)); err != nil {
					return err
				}
			}
			return nil
		})
		g.Go(func() error {
			for range turns {
				if _, _, err := s.List(ctx, "u", robby.ListOptions{Limit: 5}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	for i := range convs {
		id := fmt.Sprintf("c%d", i)
		_, msgs := load(t, s, "u", id)
		require.Len(t, msgs, turns*2)
		for turn := range turns {
			assert.Equal(t, []string{fmt.Sprint(turn), id}, msgs[turn*2:turn*2+2])
		}
	}
}

// testConcurrentOne has writers race on one conversation, each reloading
// when another went first: every message lands exactly once.
func testConcurrentOne(t *testing.T, s robby.Store) {
	ctx := context.Background()
	create(t, s, "u", "c", "")
	const writers, each = 8, 10
	var g errgroup.Group
	for w := range writers {
		g.Go(func() error {
			for i := 0; i < each; {
				c, _, err := s.Load(ctx, "u", "c")
				if err == nil {
					err = s.Append(ctx, "u", "c", c.Messages, Chat(fmt.Sprintf("w%d-%d", w, i)))
				}
				switch {
				case err == nil:
					i++
				case !errors.Is(err, robby.ErrConflict):
					return err
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	_, msgs := load(t, s, "u", "c")
	require.Len(t, msgs, writers*each)
	seen := map[string]bool{}
	for _, m := range msgs {
		assert.False(t, seen[m], "%s twice", m)
		seen[m] = true
	}
}

// CheckDeepChain checks the tip of a chain of k forks of user, each adding two
// messages, all but the tip deleted. [ForkChain] and deletes leave such a
// chain. The tip loads whole, and a fork of it outlives its deletion. Another
// user sees neither. Once both are deleted, messages reports none left.
func CheckDeepChain(t testing.TB, s robby.Store, user, tip string, k int, messages func() int) {
	t.Helper()
	ctx := context.Background()
	_, msgs, err := s.Load(ctx, user, tip)
	require.NoError(t, err)
	require.Len(t, msgs, 2*k)
	assert.JSONEq(t, `{"content":"q0","role":"user"}`, string(msgs[0].Chat))
	assert.JSONEq(t, fmt.Sprintf(`{"content":"a%d","role":"user"}`, k-1), string(msgs[2*k-1].Chat))

	fork, err := s.Fork(ctx, robby.Conversation{User: user}, tip, int64(2*k))
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, user, tip))
	_, msgs, err = s.Load(ctx, user, fork.ID)
	require.NoError(t, err)
	assert.Len(t, msgs, 2*k, "the fork keeps what it shares")
	_, _, err = s.Load(ctx, user+"-other", fork.ID)
	assert.ErrorIs(t, err, robby.ErrNoConversation, "another user sees nothing")
	require.NoError(t, s.Delete(ctx, user, fork.ID))
	assert.Zero(t, messages(), "the last delete releases the whole chain")
}
