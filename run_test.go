package robby

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/robby-go/robby/robbytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunCallsToolsAndAnswers(t *testing.T) {
	srv := newServer(t)
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("add", `{"a":2,"b":3}`)).WithUsage(10, 4),
		robbytest.Text("2 + 3 = 5").WithUsage(20, 6),
	)
	a := newTestAgent(t, srv, WithTools(addTool), WithSystem("You add."))

	res, err := a.Run(t.Context(), "What is 2 + 3?")
	require.NoError(t, err)
	assert.Equal(t, "2 + 3 = 5", res.Text)
	assert.Equal(t, 2, res.Turns)
	assert.Equal(t, Usage{PromptTokens: 30, CompletionTokens: 10, TotalTokens: 40}, res.Usage)
	require.Len(t, res.ToolCalls, 1)
	tc := res.ToolCalls[0]
	assert.Equal(t, ToolCall{ID: "call_0_add", Name: "add", Arguments: `{"a":2,"b":3}`}, tc.Call)
	assert.Equal(t, "5", tc.Output)
	assert.NoError(t, tc.Err)
	assert.Positive(t, tc.Duration)
	assert.Len(t, res.Messages, 4, "prompt, tool call, tool result, answer")

	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.False(t, reqs[0].Stream)
	assert.Equal(t, "test-model", reqs[0].Model)
	assert.Equal(t, []string{"add"}, reqs[0].Tools)
	assert.Empty(t, reqs[0].Header.Get("Authorization"), "an empty key sends no credentials")
	second := reqs[1].Messages
	require.Len(t, second, 4)
	assert.Equal(t, "system", second[0].Role)
	assert.Equal(t, robbytest.Message{Role: "user", Content: "What is 2 + 3?"}, second[1])
	assert.Equal(t, "assistant", second[2].Role)
	assert.Equal(t, []robbytest.ToolCall{{ID: "call_0_add", Name: "add", Arguments: `{"a":2,"b":3}`}}, second[2].ToolCalls)
	assert.Equal(t, robbytest.Message{Role: "tool", Content: "5", ToolCallID: "call_0_add"}, second[3])

	msgs := a.Messages()
	assert.Len(t, msgs, 5)
	checkConsistent(t, msgs)
}

func TestRunContinuesTheConversation(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.Text("Hello Bob."), robbytest.Text("Your name is Bob."))
	params := openai.ChatCompletionNewParams{
		Temperature: openai.Float(0.2),
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("I am Bob."), openai.AssistantMessage("Noted.")},
	}
	a := newTestAgent(t, srv, WithSystem("Be brief."), WithParams(params))

	_, err := a.Run(t.Context(), "Hello")
	require.NoError(t, err)
	res, err := a.Run(t.Context(), "What is my name?")
	require.NoError(t, err)
	assert.Equal(t, "Your name is Bob.", res.Text)

	last := srv.Requests()[1]
	var roles, contents []string
	for _, m := range last.Messages {
		roles = append(roles, m.Role)
		contents = append(contents, m.Content)
	}
	assert.Equal(t, []string{"system", "user", "assistant", "user", "assistant", "user"}, roles)
	assert.Equal(t, []string{"Be brief.", "I am Bob.", "Noted.", "Hello", "Hello Bob.", "What is my name?"}, contents)
	assert.Contains(t, string(last.Body), `"temperature":0.2`)
	assert.Empty(t, last.Tools, "no tools offered when the agent has none")

	a.Reset()
	assert.Len(t, a.Messages(), 3, "Reset keeps the system prompt and the WithParams messages")
}

func TestMaxTurns(t *testing.T) {
	loop := func(srv *robbytest.Server, n int) {
		for i := range n {
			srv.Reply(robbytest.ToolCalls(robbytest.Call("add", fmt.Sprintf(`{"a":%d,"b":1}`, i))))
		}
	}
	t.Run("error with partial result", func(t *testing.T) {
		srv := newServer(t)
		loop(srv, 3)
		a := newTestAgent(t, srv, WithTools(addTool), WithMaxTurns(3))
		res, err := a.Run(t.Context(), "count")
		require.ErrorIs(t, err, ErrMaxTurns)
		assert.Equal(t, 3, res.Turns)
		assert.Len(t, res.ToolCalls, 3)
		assert.Equal(t, "3", res.ToolCalls[2].Output)
		assert.Len(t, res.Messages, 7)
		checkConsistent(t, a.Messages())
	})
	t.Run("final answer without tools", func(t *testing.T) {
		srv := newServer(t)
		loop(srv, 2)
		srv.Reply(robbytest.Text("I counted to 2."))
		a := newTestAgent(t, srv, WithTools(addTool), WithMaxTurns(3), WithFinalAnswer())
		res, err := a.Run(t.Context(), "count")
		require.NoError(t, err)
		assert.Equal(t, "I counted to 2.", res.Text)
		reqs := srv.Requests()
		require.Len(t, reqs, 3)
		assert.NotEmpty(t, reqs[1].Tools)
		assert.Empty(t, reqs[2].Tools, "the last turn offers no tool")
	})
	t.Run("final turn still calling tools", func(t *testing.T) {
		srv := newServer(t)
		loop(srv, 2)
		a := newTestAgent(t, srv, WithTools(addTool), WithMaxTurns(2), WithFinalAnswer())
		res, err := a.Run(t.Context(), "count")
		require.ErrorIs(t, err, ErrMaxTurns)
		require.Len(t, res.ToolCalls, 2)
		assert.ErrorIs(t, res.ToolCalls[1].Err, ErrMaxTurns, "the call is answered, not run")
		checkConsistent(t, a.Messages())
	})
}

func TestCancelDuringToolsKeepsMemoryConsistent(t *testing.T) {
	slow, started, cancelled := waitingTool("slow")
	srv := newServer(t)
	srv.Reply(robbytest.ToolCalls(robbytest.Call("slow", `{}`), robbytest.Call("add", `{"a":1,"b":1}`)))
	a := newTestAgent(t, srv, WithTools(slow, addTool))

	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		time.Sleep(50 * time.Millisecond) // let the quick call finish
		cancel()
	}()
	start := time.Now()
	res, err := a.Run(ctx, "go")
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), time.Second)
	assert.Eventually(t, cancelled.Load, time.Second, time.Millisecond, "the running tool saw the cancellation")
	require.Len(t, res.ToolCalls, 2)
	assert.Equal(t, "2", res.ToolCalls[1].Output, "finished work is kept")
	msgs := a.Messages()
	assert.Len(t, msgs, 4)
	checkConsistent(t, msgs)
}

func TestCancelDuringStreamReturnsPromptly(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.Text("one two three four five six").WithDelay(200 * time.Millisecond))
	a := newTestAgent(t, srv)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var got []string
	start := time.Now()
	for ev, err := range a.Stream(ctx, "count") {
		if ev.Kind == EventText {
			got = append(got, ev.Delta)
			cancel()
		}
		if ev.Kind == EventDone {
			require.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, "one ", ev.Result.Text, "the partial text is kept")
		}
	}
	assert.Less(t, time.Since(start), 600*time.Millisecond)
	assert.Equal(t, []string{"one "}, got)
	assert.Empty(t, a.Messages(), "an unfinished turn is not added")
}

func TestBreakingOutOfStreamStopsEverything(t *testing.T) {
	srv := newServer(t)
	var serverSawClose atomic.Bool
	srv.Reply(robbytest.Handler(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; ; i++ {
			_, err := fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w%d \"},\"finish_reason\":null}]}\n\n", i)
			w.(http.Flusher).Flush()
			if err != nil {
				serverSawClose.Store(true)
				return
			}
			select {
			case <-r.Context().Done():
				serverSawClose.Store(true)
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}))
	a := newTestAgent(t, srv)
	n := 0
	for ev := range a.Stream(t.Context(), "talk forever") {
		if ev.Kind == EventText {
			n++
		}
		if n == 3 {
			break
		}
	}
	assert.Equal(t, 3, n)
	assert.Eventually(t, serverSawClose.Load, time.Second, 5*time.Millisecond, "the response body was not closed")
	assert.Empty(t, a.Messages())
	// The agent is usable again at once: the break released it.
	srv.Reply(robbytest.Text("again"))
	res, err := a.Run(t.Context(), "hi")
	require.NoError(t, err)
	assert.Equal(t, "again", res.Text)
}

func TestStreamEvents(t *testing.T) {
	srv := newServer(t)
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("add", `{"a":20,"b":22}`)).WithText("Let me add. ").WithReasoning("Use the tool."),
		robbytest.Text("It is 42.").WithUsage(7, 3),
	)
	a := newTestAgent(t, srv, WithTools(addTool))
	var kinds []string
	var text strings.Builder
	var result *Result
	for ev, err := range a.Stream(t.Context(), "add") {
		require.NoError(t, err)
		kinds = append(kinds, fmt.Sprintf("%d:%v", ev.Turn, ev.Kind))
		switch ev.Kind {
		case EventText:
			text.WriteString(ev.Delta)
		case EventToolCall:
			assert.Equal(t, ToolCall{ID: "call_0_add", Name: "add", Arguments: `{"a":20,"b":22}`}, *ev.ToolCall)
		case EventToolResult:
			assert.Equal(t, "42", ev.ToolResult.Output)
			assert.Equal(t, *ev.ToolCall, ev.ToolResult.Call)
		case EventDone:
			result = ev.Result
		}
	}
	assert.Equal(t, []string{"1:reasoning", "1:reasoning", "1:reasoning", "1:text", "1:text", "1:text",
		"1:tool-call-delta", "1:tool-call-delta", "1:tool-call", "1:tool-result", "1:turn-end",
		"2:text", "2:text", "2:text", "2:turn-end", "2:done"}, kinds)
	assert.Equal(t, "Let me add. It is 42.", text.String())
	require.NotNil(t, result)
	assert.Equal(t, "It is 42.", result.Text)
	assert.Equal(t, Usage{PromptTokens: 17, CompletionTokens: 8, TotalTokens: 25}, result.Usage, "usage chunks of both turns")
	reqs := srv.Requests()
	assert.True(t, reqs[0].Stream)
	assert.Contains(t, string(reqs[0].Body), `"stream_options":{"include_usage":true}`)
	assert.Equal(t, "Let me add. ", reqs[1].Messages[1].Content, "text before a call is kept with it")
	assert.NotContains(t, string(reqs[1].Body), "Use the tool.", "reasoning is not sent back")
}
