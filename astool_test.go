package robby

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestAgentToolEventsNested: in a streamed run, the events of an agent used
// as a tool come in the parent's stream. Each is wrapped in an EventAgent
// naming the call, before the call's result. Its usage counts in the turn's
// and the run's.
func TestAgentToolEventsNested(t *testing.T) {
	srv := newServer(t)
	researcher := newTestAgent(t, srv, WithTools(addTool))
	writer := newTestAgent(t, srv, WithTools(researcher.AsTool("research", "Finds facts")))
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("research", `{"prompt":"How tall?"}`)).WithUsage(10, 1),
		robbytest.ToolCalls(robbytest.Call("add", `{"a":300,"b":30}`)).WithUsage(100, 10),
		robbytest.Text("330 m").WithUsage(200, 20),
		robbytest.Text("It is 330 m tall.").WithUsage(1000, 2),
	)
	var (
		kinds      []string
		turnUsage  []Usage
		nestedText string
	)
	var res *Result
	for e, err := range writer.Stream(context.Background(), "Write") {
		require.NoError(t, err)
		inner, path := e.Innermost()
		if e.Kind == EventAgent {
			require.Len(t, path, 1)
			assert.Equal(t, "research", path[0].Name)
			assert.Equal(t, "call_0_research", path[0].ID)
			assert.Equal(t, 1, e.Turn, "the parent's turn")
			if inner.Kind == EventText {
				nestedText += inner.Delta
			}
			kinds = append(kinds, "research:"+inner.Kind.String())
			continue
		}
		require.Empty(t, path)
		kinds = append(kinds, e.Kind.String())
		switch e.Kind {
		case EventTurnEnd:
			turnUsage = append(turnUsage, *e.Usage)
		case EventDone:
			res = e.Result
		}
	}
	assert.Equal(t, []string{
		"tool-call-delta", "tool-call",
		"research:tool-call-delta", "research:tool-call", "research:tool-result", "research:turn-end",
		"research:text", "research:text", "research:turn-end",
		"tool-result", "turn-end",
		"text", "text", "text", "text", "text", "turn-end", "done",
	}, compactDeltas(kinds))
	assert.Equal(t, "330 m", nestedText)
	require.Len(t, turnUsage, 2)
	assert.Equal(t, Usage{PromptTokens: 310, CompletionTokens: 31, TotalTokens: 341}, turnUsage[0], "the turn counts the agent it ran")
	require.NotNil(t, res)
	assert.Equal(t, Usage{PromptTokens: 1310, CompletionTokens: 33, TotalTokens: 1343}, res.Usage)
}

// compactDeltas keeps one of each run of tool-call-delta events, whose
// count depends on how the arguments were cut.
func compactDeltas(kinds []string) []string {
	return slices.CompactFunc(kinds, func(a, b string) bool { return a == b && strings.HasSuffix(a, "tool-call-delta") })
}

// TestAgentToolUsageInRun: without a stream too, the usage of the agent
// a tool ran counts in the run's.
func TestAgentToolUsageInRun(t *testing.T) {
	srv := newServer(t)
	sub := newTestAgent(t, srv)
	parent := newTestAgent(t, srv, WithTools(AgentTool[query, facts](sub, "research", "", WithAnswerMode(AnswerNative))))
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("research", `{"topic":"x"}`)).WithUsage(10, 1),
		robbytest.Answer(`{"facts":["a"]}`).WithUsage(100, 10),
		robbytest.Text("done").WithUsage(20, 2),
	)
	res, err := parent.Run(context.Background(), "go")
	require.NoError(t, err)
	assert.Equal(t, Usage{PromptTokens: 130, CompletionTokens: 13, TotalTokens: 143}, res.Usage)
}

// TestAgentToolEventsTwoDeep: an agent's agent's events carry both calls,
// outermost first.
func TestAgentToolEventsTwoDeep(t *testing.T) {
	srv := newServer(t)
	leaf := newTestAgent(t, srv)
	mid := newTestAgent(t, srv, WithTools(leaf.AsTool("leaf", "")))
	top := newTestAgent(t, srv, WithTools(mid.AsTool("mid", "")))
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("mid", `{"prompt":"a"}`)),
		robbytest.ToolCalls(robbytest.Call("leaf", `{"prompt":"b"}`)),
		robbytest.Text("leaf answer"),
		robbytest.Text("mid answer"),
		robbytest.Text("top answer"),
	)
	var leafText string
	for e, err := range top.Stream(context.Background(), "go") {
		require.NoError(t, err)
		inner, path := e.Innermost()
		if inner.Kind == EventText && len(path) == 2 {
			assert.Equal(t, []string{"mid", "leaf"}, []string{path[0].Name, path[1].Name})
			leafText += inner.Delta
		}
	}
	assert.Equal(t, "leaf answer", leafText)
}

// TestAgentToolStopsWithTheStream: a consumer that stops reading the
// parent's stream while the agent used as a tool runs cancels the agent's
// request.
func TestAgentToolStopsWithTheStream(t *testing.T) {
	srv := newServer(t)
	sub := newTestAgent(t, srv)
	parent := newTestAgent(t, srv, WithTools(sub.AsTool("sub", "")))
	ended := make(chan struct{})
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("sub", `{"prompt":"wait"}`)),
		robbytest.Handler(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"working"}}]}`+"\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			close(ended)
		}),
	)
	for e := range parent.Stream(context.Background(), "go") {
		if inner, _ := e.Innermost(); e.Kind == EventAgent && inner.Kind == EventText {
			break
		}
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the agent's request outlived the stream")
	}
}

// TestAgentToolTurnLimitIsItsOwn: an agent used as a tool stops at its
// own turn limit; the calling run reads the error and goes on.
func TestAgentToolTurnLimitIsItsOwn(t *testing.T) {
	srv := newServer(t)
	sub := newTestAgent(t, srv, WithTools(addTool), WithMaxTurns(1))
	parent := newTestAgent(t, srv, WithTools(sub.AsTool("sub", "")), WithMaxTurns(3))
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("sub", `{"prompt":"loop"}`)),
		robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)), // the sub-agent's only turn
		robbytest.Text("the sub-agent gave up"),
	)
	res, err := parent.Run(context.Background(), "go")
	require.NoError(t, err)
	assert.Equal(t, 2, res.Turns)
	require.Len(t, res.ToolCalls, 1)
	assert.ErrorIs(t, res.ToolCalls[0].Err, ErrMaxTurns)
	assert.Zero(t, srv.Pending())
}

// TestNotifyAgent: a tool that runs an agent elsewhere passes its events on
// as an agent tool's are, wrapped in an EventAgent naming the call; nobody
// streams a run of Run, so they are not passed on there.
func TestNotifyAgent(t *testing.T) {
	srv := newServer(t)
	var passed []bool
	remote := NewTool("remote", "Asks an agent elsewhere", func(ctx context.Context, _ struct{}) (string, error) {
		passed = append(passed, NotifyAgent(ctx, Event{Kind: EventText, Delta: "Hel"}), NotifyAgent(ctx, Event{Kind: EventText, Delta: "lo"}))
		return "Hello", nil
	})
	a := newTestAgent(t, srv, WithTools(remote))
	srv.Reply(robbytest.ToolCalls(robbytest.Call("remote", `{}`)), robbytest.Text("It said hello."))
	var text string
	for e, err := range a.Stream(context.Background(), "Ask") {
		require.NoError(t, err)
		if in, path := e.Innermost(); len(path) == 1 && path[0].Name == "remote" && in.Kind == EventText {
			text += in.Delta
		}
	}
	assert.Equal(t, "Hello", text)
	srv.Reply(robbytest.ToolCalls(robbytest.Call("remote", `{}`)), robbytest.Text("It said hello."))
	_, err := a.Run(context.Background(), "Ask")
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true, false, false}, passed)
}
