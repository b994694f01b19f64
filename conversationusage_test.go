package robby_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

// TestConversationUsageStored runs a stored conversation in turn on agents
// that share nothing but the store, as processes do. Each call's usage is
// stored with its message. Each agent's Usage is the conversation's,
// whichever agents wrote it. A fork carries the usage of the messages it
// holds.
func TestConversationUsageStored(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	srv := robbytest.NewServer()
	defer srv.Close()
	add := robby.NewTool("add", "Add", func(ctx context.Context, in sum) (int, error) { return in.A + in.B, nil })
	newAgent := func() *robby.Agent {
		a, err := robby.New(robby.WithBaseURL(srv.URL), robby.WithModel("m"), robby.WithTools(add),
			robby.WithPrices(map[string]robby.Price{"m": {Input: 2, CachedInput: 1, Output: 8}}))
		require.NoError(t, err)
		t.Cleanup(func() { a.Close() })
		return a
	}
	stored := func(id string) (robby.Conversation, []robby.Message) {
		t.Helper()
		c, msgs, err := store.Load(ctx, "alice", id)
		require.NoError(t, err)
		return c, msgs
	}

	srv.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"A":1,"B":2}`)).WithUsage(100, 20).WithUsageDetails(40, 5),
		robbytest.Text("3").WithUsage(130, 10))
	first := newAgent()
	var turns []robby.Usage
	for ev, err := range first.Stream(ctx, "What is 1+2?", robby.WithConversation(store, "alice", "c")) {
		require.NoError(t, err)
		if ev.Kind == robby.EventTurnEnd {
			turns = append(turns, *ev.Usage)
		}
	}
	require.Len(t, turns, 2)
	run1 := sumUsage(turns...)
	assertUsage(t, run1, first.Usage())
	c, msgs := stored("c")
	assertUsage(t, run1, c.Usage)
	require.Len(t, msgs, 4) // prompt, call, result, answer
	assertUsage(t, robby.Usage{}, msgs[0].Usage)
	assertUsage(t, turns[0], msgs[1].Usage)
	assertUsage(t, robby.Usage{}, msgs[2].Usage)
	assertUsage(t, turns[1], msgs[3].Usage)
	assert.Equal(t, int64(40), msgs[1].Usage.CachedPromptTokens)
	assert.Equal(t, int64(5), msgs[1].Usage.ReasoningTokens)
	assert.Positive(t, c.Usage.Cost)

	// Another agent (a process started later) goes on from the total.
	second := newAgent()
	srv.Reply(robbytest.Text("4").WithUsage(200, 5))
	res, err := second.Run(ctx, "And 2+2?", robby.WithConversation(store, "alice", "c"))
	require.NoError(t, err)
	total := sumUsage(run1, res.Usage)
	assertUsage(t, total, second.Usage())
	c, _ = stored("c")
	assertUsage(t, total, c.Usage)

	// A failed call adds nothing; the error record carries nothing.
	srv.Reply(robbytest.Error(400, `{"error":{"message":"no"}}`))
	_, err = newAgent().Run(ctx, "And 3+3?", robby.WithConversation(store, "alice", "c"))
	require.Error(t, err)
	c, msgs = stored("c")
	assertUsage(t, total, c.Usage)
	assertUsage(t, robby.Usage{}, msgs[len(msgs)-1].Usage)

	// A fork after the first call carries that call's usage.
	fork, err := store.Fork(ctx, robby.Conversation{User: "alice"}, "c", 2)
	require.NoError(t, err)
	assertUsage(t, turns[0], fork.Usage)
	third := newAgent()
	srv.Reply(robbytest.Text("3").WithUsage(50, 1))
	res, err = third.Resume(ctx, robby.WithConversation(store, "alice", fork.ID))
	require.NoError(t, err)
	assertUsage(t, sumUsage(turns[0], res.Usage), third.Usage())
	c, _ = stored(fork.ID)
	assertUsage(t, sumUsage(turns[0], res.Usage), c.Usage)

	third.Reset()
	assertUsage(t, robby.Usage{}, third.Usage())
}

func sumUsage(us ...robby.Usage) robby.Usage {
	var s robby.Usage
	for _, u := range us {
		s = s.Add(u)
	}
	return s
}

// assertUsage compares usages, the costs to rounding.
func assertUsage(t *testing.T, want, got robby.Usage) {
	t.Helper()
	assert.InDelta(t, want.Cost, got.Cost, 1e-12, "cost")
	want.Cost, got.Cost = 0, 0
	assert.Equal(t, want, got)
}

// TestConversationUsageCountsAgentTools: the calls of an agent that a tool
// ran are the conversation's too, as they are the run's. They were counted
// only in Result.Usage. Now they count in Agent.Usage and are stored with the
// tool's result, for a run and for ExecuteToolCalls.
func TestConversationUsageCountsAgentTools(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	srv := robbytest.NewServer()
	defer srv.Close()
	newAgent := func(opts ...robby.Option) *robby.Agent {
		a, err := robby.New(append([]robby.Option{robby.WithBaseURL(srv.URL), robby.WithModel("m"),
			robby.WithPrices(map[string]robby.Price{"m": {Input: 2, Output: 8}})}, opts...)...)
		require.NoError(t, err)
		t.Cleanup(func() { a.Close() })
		return a
	}
	researcher := newAgent()
	writer := newAgent(robby.WithTools(researcher.AsTool("research", "Finds facts")))

	srv.Reply(robbytest.ToolCalls(robbytest.Call("research", `{"prompt":"Paris?"}`)).WithUsage(100, 10),
		robbytest.Text("Paris has 2,102,650 people.").WithUsage(300, 30), // the researcher
		robbytest.Text("Paris is big.").WithUsage(150, 15))
	res, err := writer.Run(ctx, "Write on Paris", robby.WithConversation(store, "alice", "w"))
	require.NoError(t, err)
	assertUsage(t, sumUsage(usage(100, 10), usage(300, 30), usage(150, 15)), res.Usage)
	assertUsage(t, res.Usage, writer.Usage())
	c, msgs, err := store.Load(ctx, "alice", "w")
	require.NoError(t, err)
	assertUsage(t, res.Usage, c.Usage)
	require.Len(t, msgs, 4) // prompt, call, result, answer
	assertUsage(t, usage(300, 30), msgs[2].Usage)

	srv.Reply(robbytest.Text("Lyon has 520,774 people.").WithUsage(200, 20))
	writer.Reset()
	_, err = writer.ExecuteToolCalls(ctx, []robby.ToolCall{{ID: "call_1", Name: "research", Arguments: `{"prompt":"Lyon?"}`}})
	require.NoError(t, err)
	assertUsage(t, usage(200, 20), writer.Usage())
}

// usage is the usage of one call at the prices of the test above.
func usage(in, out int64) robby.Usage {
	return robby.Usage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out, Cost: float64(2*in+8*out) / 1e6}
}
