package storetest

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
)

// answer returns an assistant message as a store keeps it, with the usage
// of the call that wrote it.
func answer(text string, u robby.Usage) robby.Message {
	b, err := json.Marshal(map[string]string{"role": "assistant", "content": text})
	if err != nil {
		panic(err)
	}
	return robby.Message{Chat: b, Usage: u}
}

// usageOf returns a usage of n prompt tokens, with its details and a cost
// that sums exactly in binary floating point.
func usageOf(n int64) robby.Usage {
	return robby.Usage{PromptTokens: n, CompletionTokens: 2 * n, TotalTokens: 3 * n,
		CachedPromptTokens: n / 2, ReasoningTokens: n / 4, Cost: float64(n) / 8}
}

// testUsage checks that each message keeps its usage and each conversation
// the sum of its messages', forks included.
func testUsage(t *testing.T, s robby.Store) {
	ctx := context.Background()
	c := create(t, s, "u", "a", "Costs")
	assert.Equal(t, robby.Usage{}, c.Usage)
	require.NoError(t, s.Append(ctx, "u", "a", 0, Chat("q1"), answer("a1", usageOf(8))))
	require.NoError(t, s.Append(ctx, "u", "a", 2, Chat("q2"), answer("a2", usageOf(16))))
	require.NoError(t, s.Append(ctx, "u", "a", 4, robby.Message{Error: "stopped", Usage: usageOf(32)}))

	c, msgs, err := s.Load(ctx, "u", "a")
	require.NoError(t, err)
	assert.Equal(t, sum(8, 16, 32), c.Usage)
	want := []robby.Usage{{}, usageOf(8), {}, usageOf(16), usageOf(32)}
	for i, m := range msgs {
		assert.Equal(t, want[i], m.Usage, "message %d", m.Seq)
	}
	page, _, err := s.List(ctx, "u", robby.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, sum(8, 16, 32), page[0].Usage)

	// A conflicting write adds nothing.
	err = s.Append(ctx, "u", "a", 2, answer("late", usageOf(64)))
	require.ErrorIs(t, err, robby.ErrConflict)
	c, _, err = s.Load(ctx, "u", "a")
	require.NoError(t, err)
	assert.Equal(t, sum(8, 16, 32), c.Usage)

	// A fork counts the messages it holds, at the end or inside.
	for n, u := range map[int64]robby.Usage{5: sum(8, 16, 32), 4: sum(8, 16), 3: sum(8), 2: sum(8), 1: {}, 0: {}} {
		f, err := s.Fork(ctx, robby.Conversation{User: "u"}, "a", n)
		require.NoError(t, err)
		assert.Equal(t, u, f.Usage, "fork at %d", n)
		loaded, _, err := s.Load(ctx, "u", f.ID)
		require.NoError(t, err)
		assert.Equal(t, u, loaded.Usage, "fork at %d, loaded", n)
	}
	// A fork of a fork inside what it shares, after its source went on.
	b, err := s.Fork(ctx, robby.Conversation{User: "u"}, "a", 4)
	require.NoError(t, err)
	require.NoError(t, s.Append(ctx, "u", b.ID, 4, answer("b5", usageOf(128))))
	d, err := s.Fork(ctx, robby.Conversation{User: "u"}, b.ID, 5)
	require.NoError(t, err)
	assert.Equal(t, sum(8, 16, 128), d.Usage)
	e, err := s.Fork(ctx, robby.Conversation{User: "u"}, b.ID, 2)
	require.NoError(t, err)
	assert.Equal(t, sum(8), e.Usage)
	require.NoError(t, s.Delete(ctx, "u", "a"))
	require.NoError(t, s.Delete(ctx, "u", b.ID))
	require.NoError(t, s.Append(ctx, "u", d.ID, 5, answer("d6", usageOf(256))))
	loaded, _, err := s.Load(ctx, "u", d.ID)
	require.NoError(t, err)
	assert.Equal(t, sum(8, 16, 128, 256), loaded.Usage, "appended to a fork whose sources are deleted")
	loaded, _, err = s.Load(ctx, "u", e.ID)
	require.NoError(t, err)
	assert.Equal(t, sum(8), loaded.Usage)

	// A negative or not finite usage is refused, and nothing is stored.
	for _, u := range []robby.Usage{{PromptTokens: -1}, {Cost: -0.5}, {ReasoningTokens: -3}, {Cost: math.NaN()}} {
		err := s.Append(ctx, "u", d.ID, 6, Chat("ok"), answer("bad", u))
		assert.Error(t, err, "%+v", u)
	}
	loaded, msgs, err = s.Load(ctx, "u", d.ID)
	require.NoError(t, err)
	assert.Len(t, msgs, 6)
	assert.Equal(t, sum(8, 16, 128, 256), loaded.Usage)
}

// sum returns the usage of messages of usageOf(n) for each n.
func sum(ns ...int64) robby.Usage {
	var u robby.Usage
	for _, n := range ns {
		u = u.Add(usageOf(n))
	}
	return u
}

// testUsageSaturates checks that usage sums stop at the largest int64 rather
// than overflow. A conversation whose messages' usage passes it still loads,
// lists and forks, its sums at the bound.
func testUsageSaturates(t *testing.T, s robby.Store) {
	ctx := context.Background()
	create(t, s, "u", "big", "Huge usage")
	huge := robby.Usage{PromptTokens: math.MaxInt64 - 10, CompletionTokens: math.MaxInt64, TotalTokens: math.MaxInt64,
		CachedPromptTokens: 1, ReasoningTokens: 1, Cost: 1e300}
	require.NoError(t, s.Append(ctx, "u", "big", 0, Chat("q1"), answer("a1", huge)))
	require.NoError(t, s.Append(ctx, "u", "big", 2, Chat("q2"), answer("a2", huge)))
	want := robby.Usage{PromptTokens: math.MaxInt64, CompletionTokens: math.MaxInt64, TotalTokens: math.MaxInt64,
		CachedPromptTokens: 2, ReasoningTokens: 2, Cost: 2e300}
	c, msgs, err := s.Load(ctx, "u", "big")
	require.NoError(t, err)
	assert.Len(t, msgs, 4)
	assert.Equal(t, want, c.Usage)
	page, _, err := s.List(ctx, "u", robby.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, want, page[0].Usage)
	for _, at := range []int64{4, 3} {
		f, err := s.Fork(ctx, robby.Conversation{User: "u"}, "big", at)
		require.NoError(t, err, "fork at %d", at)
		_, _, err = s.Load(ctx, "u", f.ID)
		require.NoError(t, err, "fork at %d", at)
		if at == 4 {
			assert.Equal(t, want, f.Usage)
		}
	}
}
