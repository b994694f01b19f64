package robby

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

func TestAgentAsTool(t *testing.T) {
	srv := newServer(t)
	researcher := newTestAgent(t, srv, WithSystem("You research."), WithTools(addTool))
	srv.Reply(robbytest.Text("earlier")) // its own conversation is not what a call sees
	_, err := researcher.Run(context.Background(), "an earlier question")
	require.NoError(t, err)
	planner := newTestAgent(t, srv, WithSystem("You plan."), WithTools(researcher.AsTool("research", "Finds facts")))
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("research", `{"prompt":"How tall is the Eiffel Tower?"}`)),
		robbytest.ToolCalls(robbytest.Call("add", `{"a":300,"b":30}`)), // the researcher uses its own tools
		robbytest.Text("330 m"),
		robbytest.Text("Plan: it is 330 m tall."),
	)
	res, err := planner.Run(context.Background(), "Plan a visit")
	require.NoError(t, err)
	assert.Equal(t, "Plan: it is 330 m tall.", res.Text)
	require.Len(t, res.ToolCalls, 1)
	assert.Equal(t, "330 m", res.ToolCalls[0].Output)
	reqs := srv.Requests()
	require.Len(t, reqs, 5)
	sub := reqs[2].Messages // the researcher's first request: a fresh conversation
	require.Len(t, sub, 2)
	assert.Equal(t, "You research.", sub[0].Content)
	assert.Equal(t, "How tall is the Eiffel Tower?", sub[1].Content)
	assert.Contains(t, reqs[2].Tools, "add")
	assert.Len(t, researcher.Messages(), 3, "the agent's own conversation is untouched")
}

type query struct {
	Topic string `json:"topic"`
}

type facts struct {
	Facts []string `json:"facts"`
}

func TestAgentToolTyped(t *testing.T) {
	srv := newServer(t)
	researcher := newTestAgent(t, srv)
	planner := newTestAgent(t, srv, WithTools(AgentTool[query, facts](researcher, "research", "Finds facts", WithAnswerMode(AnswerNative))))
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("research", `{"topic":"Eiffel Tower"}`)),
		robbytest.Answer(`{"facts": ["330 m", "1889"]}`),
		robbytest.Text("done"),
	)
	res, err := planner.Run(context.Background(), "Plan a visit")
	require.NoError(t, err)
	assert.JSONEq(t, `{"facts":["330 m","1889"]}`, res.ToolCalls[0].Output)
	reqs := srv.Requests()
	assert.Equal(t, `{"topic":"Eiffel Tower"}`, reqs[1].Messages[0].Content)
	assert.True(t, robbytest.AsksJSONSchema(reqs[1]))
}

func TestAgentToolDepthIsBounded(t *testing.T) {
	srv := newServer(t)
	var self *Agent
	again := NewTool("again", "Asks yourself", func(ctx context.Context, in agentPrompt) (string, error) {
		inv, err := self.AsTool("again", "Asks yourself").bind(mustJSON(t, in))
		if err != nil {
			return "", err
		}
		out, err := inv(ctx)
		s, _ := out.(string)
		return s, err
	})
	self = newTestAgent(t, srv, WithTools(again))
	// Every agent in the chain calls again; the one past the bound is
	// refused, and each answers with what it got.
	for range MaxAgentDepth + 1 {
		srv.Reply(robbytest.ToolCalls(robbytest.Call("again", `{"prompt":"deeper"}`)))
	}
	for range MaxAgentDepth + 1 {
		srv.Reply(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			return robbytest.Text(req.Messages[len(req.Messages)-1].Content)
		}))
	}
	res, err := self.Run(context.Background(), "go")
	require.NoError(t, err)
	assert.Contains(t, res.Text, "not run: agents already call each other 4 deep (MaxAgentDepth)")
	assert.Zero(t, srv.Pending())
}

func TestAgentToolCancelledWithItsParent(t *testing.T) {
	srv := newServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	sub := newTestAgent(t, srv)
	parent := newTestAgent(t, srv, WithTools(sub.AsTool("sub", "")))
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("sub", `{"prompt":"wait"}`)),
		robbytest.Handler(func(w http.ResponseWriter, r *http.Request) {
			cancel()
			<-r.Context().Done()
		}),
	)
	_, err := parent.Run(ctx, "go")
	assert.ErrorIs(t, err, context.Canceled)
}
