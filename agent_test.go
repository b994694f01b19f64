package robby

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// newTestAgent builds an agent on srv with retries off, so that error tests
// see the first answer.
func newTestAgent(t *testing.T, srv *robbytest.Server, opts ...Option) *Agent {
	t.Helper()
	base := []Option{WithBaseURL(srv.URL), WithAPIKey(""), WithModel("test-model"),
		WithRequestOptions(option.WithMaxRetries(0))}
	a, err := New(append(base, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	return a
}

func newServer(t *testing.T) *robbytest.Server {
	srv := robbytest.NewServer()
	t.Cleanup(srv.Close)
	return srv
}

type addArgs struct {
	A int `json:"a" jsonschema:"the first number"`
	B int `json:"b" jsonschema:"the second number"`
}

var addTool = NewTool("add", "Adds two numbers", func(_ context.Context, in addArgs) (int, error) {
	return in.A + in.B, nil
})

// checkConsistent fails if a conversation holds a tool call without exactly
// one tool message, or a tool message for no call.
func checkConsistent(t *testing.T, msgs []openai.ChatCompletionMessageParamUnion) {
	t.Helper()
	open := map[string]bool{}
	for _, m := range msgs {
		switch {
		case m.OfAssistant != nil:
			assert.Empty(t, open, "a new assistant message while calls are unanswered")
			for _, c := range m.OfAssistant.ToolCalls {
				open[c.OfFunction.ID] = true
			}
		case m.OfTool != nil:
			assert.True(t, open[m.OfTool.ToolCallID], "tool message for no open call %q", m.OfTool.ToolCallID)
			delete(open, m.OfTool.ToolCallID)
		}
	}
	assert.Empty(t, open, "tool calls without a result")
}

func TestNewRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		want string
	}{
		{"no model", nil, "no model"},
		{"empty model", []Option{WithModel("")}, "empty model"},
		{"zero turns", []Option{WithModel("m"), WithMaxTurns(0)}, "WithMaxTurns"},
		{"negative calls", []Option{WithModel("m"), WithMaxToolCallsPerTurn(-1)}, "WithMaxToolCallsPerTurn"},
		{"negative timeout", []Option{WithModel("m"), WithToolTimeout(-time.Second)}, "WithToolTimeout"},
		{"nil logger", []Option{WithModel("m"), WithLogger(nil)}, "nil logger"},
		{"empty base URL", []Option{WithModel("m"), WithBaseURL("")}, "empty URL"},
		{"duplicate tool", []Option{WithModel("m"), WithTools(addTool, addTool)}, "duplicate"},
		{"invalid name", []Option{WithModel("m"), WithTools(FuncTool("a tool", "", nil, nil))}, "name must match"},
		{"long name", []Option{WithModel("m"), WithTools(FuncTool(strings.Repeat("x", 65), "", nil, nil))}, "name must match"},
		{"zero tool", []Option{WithModel("m"), WithTools(Tool{name: "zero"})}, "not built"},
		{"nil function", []Option{WithModel("m"), WithTools(FuncTool("f", "", nil, nil))}, "nil function"},
		{"non-object input", []Option{WithModel("m"), WithTools(NewTool("s", "", func(context.Context, string) (string, error) { return "", nil }))}, "not a struct"},
		{"uninferable input", []Option{WithModel("m"), WithTools(NewTool("c", "", func(context.Context, struct{ C chan int }) (string, error) { return "", nil }))}, "tool \"c\""},
		{"bad schema", []Option{WithModel("m"), WithTools(FuncTool("f", "", map[string]any{"type": 12}, nil))}, "tool \"f\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(tt.opts...)
			require.Error(t, err)
			assert.Nil(t, a)
			assert.Contains(t, err.Error(), tt.want)
			assert.True(t, strings.HasPrefix(err.Error(), "robby: "), err.Error())
		})
	}
}

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

func TestToolSchemaSentToModel(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.Text("ok"))
	a := newTestAgent(t, srv, WithTools(addTool))
	_, err := a.Run(t.Context(), "hi")
	require.NoError(t, err)
	var body struct {
		Tools []struct {
			Type     string
			Function struct {
				Name        string
				Description string
				Parameters  map[string]any
			}
		}
	}
	require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &body))
	require.Len(t, body.Tools, 1)
	f := body.Tools[0].Function
	assert.Equal(t, "function", body.Tools[0].Type)
	assert.Equal(t, "Adds two numbers", f.Description)
	assert.Equal(t, "object", f.Parameters["type"])
	assert.ElementsMatch(t, []any{"a", "b"}, f.Parameters["required"])
	props := f.Parameters["properties"].(map[string]any)
	assert.Equal(t, map[string]any{"type": "integer", "description": "the first number"}, props["a"])
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

func TestToolCallsRunConcurrentlyAndAnswerInOrder(t *testing.T) {
	srv := newServer(t)
	var calls []robbytest.ToolCall
	for _, ms := range []int{60, 10, 40, 20} {
		calls = append(calls, robbytest.Call("sleep", fmt.Sprintf(`{"ms":%d}`, ms)))
	}
	srv.Reply(robbytest.ToolCalls(calls...), robbytest.Text("done"))
	var running, most atomic.Int32
	sleep := NewTool("sleep", "Sleeps", func(ctx context.Context, in struct {
		MS int `json:"ms"`
	}) (string, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(time.Duration(in.MS) * time.Millisecond)
		return fmt.Sprintf("slept %d", in.MS), nil
	})
	a := newTestAgent(t, srv, WithTools(sleep))

	start := time.Now()
	res, err := a.Run(t.Context(), "sleep")
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 130*time.Millisecond, "calls ran one after another")
	assert.EqualValues(t, 4, most.Load())
	var outputs []string
	for _, m := range srv.Requests()[1].Messages[2:] {
		outputs = append(outputs, m.ToolCallID+"="+m.Content)
	}
	assert.Equal(t, []string{"call_0_sleep=slept 60", "call_1_sleep=slept 10", "call_2_sleep=slept 40", "call_3_sleep=slept 20"}, outputs)
	assert.Len(t, res.ToolCalls, 4)
}

// TestEveryCallGetsOneToolMessage checks the faults the model sees as tool
// results, each answered so that the next request is valid.
func TestEveryCallGetsOneToolMessage(t *testing.T) {
	failing := FuncTool("fail", "Fails", nil, func(context.Context, map[string]any) (any, error) {
		return nil, errors.New("disk on fire")
	})
	panicking := FuncTool("panic", "Panics", nil, func(context.Context, map[string]any) (any, error) {
		panic("boom")
	})
	hanging := FuncTool("hang", "Hangs until cancelled", nil, func(ctx context.Context, _ map[string]any) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	srv := newServer(t)
	srv.Reply(
		robbytest.ToolCalls(
			robbytest.Call("add", `{"a":1,"b":2}`),
			robbytest.Call("nope", `{}`),
			robbytest.Call("add", `{"a":1,`),
			robbytest.Call("add", `{"a":"one","b":2}`),
		),
		robbytest.ToolCalls(
			robbytest.Call("fail", `{}`),
			robbytest.Call("panic", `{}`),
			robbytest.Call("hang", `{}`),
			robbytest.Call("add", `{"a":1,"b":1}`),
			robbytest.Call("add", `{"a":2,"b":2}`),
			robbytest.Call("add", `{"a":3,"b":3}`),
		),
		robbytest.Text("survived"),
	)
	a := newTestAgent(t, srv, WithTools(addTool, failing, panicking, hanging), WithToolTimeout(50*time.Millisecond))

	res, err := a.Run(t.Context(), "go")
	require.NoError(t, err)
	assert.Equal(t, "survived", res.Text)
	require.Len(t, res.ToolCalls, 10)
	byIndex := func(i int) ToolResult { return res.ToolCalls[i] }

	assert.Equal(t, "3", byIndex(0).Output)
	assert.ErrorIs(t, byIndex(1).Err, ErrUnknownTool)
	assert.Contains(t, byIndex(1).Output, `"nope"`)
	assert.Contains(t, byIndex(1).Output, "add, fail, hang, panic")
	assert.ErrorIs(t, byIndex(2).Err, ErrInvalidArguments)
	assert.Contains(t, byIndex(2).Output, "not valid JSON")
	assert.ErrorIs(t, byIndex(3).Err, ErrInvalidArguments)
	assert.Contains(t, byIndex(3).Output, "/properties/a")

	assert.Contains(t, byIndex(4).Output, "disk on fire")
	assert.ErrorIs(t, byIndex(5).Err, ErrToolPanic)
	assert.Contains(t, byIndex(5).Output, "boom")
	assert.ErrorIs(t, byIndex(6).Err, context.DeadlineExceeded)
	assert.Contains(t, byIndex(6).Output, "timed out after 50ms")
	assert.Equal(t, "2", byIndex(7).Output)
	assert.ErrorIs(t, byIndex(8).Err, ErrToolLimit, "the fifth call of a turn is past the default limit of 4")
	assert.ErrorIs(t, byIndex(9).Err, ErrToolLimit)
	assert.Contains(t, byIndex(9).Output, "limit is 4")

	for i, req := range srv.Requests()[1:] {
		var ids []string
		for _, m := range req.Messages {
			if m.Role == "tool" {
				ids = append(ids, m.ToolCallID)
			}
		}
		assert.Len(t, ids, []int{4, 10}[i], "request %d", i+1)
	}
	checkConsistent(t, a.Messages())
}

func TestToolIgnoringItsContextIsAbandoned(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	stuck := FuncTool("stuck", "Ignores cancellation", nil, func(context.Context, map[string]any) (any, error) {
		<-release
		return "late", nil
	})
	srv := newServer(t)
	srv.Reply(robbytest.ToolCalls(robbytest.Call("stuck", `{}`)), robbytest.Text("moved on"))
	a := newTestAgent(t, srv, WithTools(stuck), WithToolTimeout(30*time.Millisecond))

	start := time.Now()
	res, err := a.Run(t.Context(), "go")
	require.NoError(t, err)
	assert.Less(t, time.Since(start), time.Second)
	assert.ErrorIs(t, res.ToolCalls[0].Err, context.DeadlineExceeded)
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

func TestEndpointErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		message string
	}{
		{"openai envelope", 401, `{"error":{"message":"Incorrect API key provided: sk-...abc.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, "Incorrect API key provided: sk-...abc."},
		{"ollama unknown model", 404, `{"error":{"message":"model 'qwen9' not found","type":"not_found_error","param":null,"code":null}}`, "model 'qwen9' not found"},
		{"context too long", 400, `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, "This model's maximum context length is 8192 tokens."},
		{"llama.cpp numeric code", 400, `{"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error"}}`, "the request exceeds the available context size"},
		{"bare string", 400, `{"error":"model is required"}`, "model is required"},
		{"gemini array", 400, `[{"error":{"code":400,"message":"Invalid JSON payload received.","status":"INVALID_ARGUMENT"}}]`, "Invalid JSON payload received."},
		{"mistral object", 422, `{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","store"],"msg":"Extra inputs are not permitted"}]},"type":"invalid_request_error","param":null,"code":null}`, "Extra inputs are not permitted"},
		{"plain text", 404, "model not found\n", "model not found"},
		{"html proxy page", 502, "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>", "502 Bad Gateway"},
		{"empty body", 503, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t)
			srv.Reply(robbytest.Error(tt.status, tt.body))
			a := newTestAgent(t, srv)
			res, err := a.Run(t.Context(), "hi")
			require.Error(t, err)
			require.NotNil(t, res)
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, tt.status, apiErr.StatusCode)
			assert.Equal(t, tt.message, apiErr.Message)
			assert.Contains(t, err.Error(), fmt.Sprint(tt.status))
			assert.Contains(t, err.Error(), tt.message)
			var oe *openai.Error
			require.ErrorAs(t, err, &oe, "the openai-go error stays reachable")
			assert.Equal(t, tt.status, oe.StatusCode)
			assert.Empty(t, a.Messages(), "a failed first turn leaves the conversation as it was")
		})
	}
}

func TestRetriesHonourRetryAfter(t *testing.T) {
	srv := newServer(t)
	var first time.Time
	srv.Reply(
		robbytest.Handler(func(w http.ResponseWriter, _ *http.Request) {
			first = time.Now()
			w.Header().Set("Retry-After-Ms", "150")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"Rate limit reached","type":"requests"}}`)
		}),
		robbytest.Error(http.StatusInternalServerError, `{"error":{"message":"upstream hiccup"}}`),
		robbytest.Text("finally"),
	)
	a, err := New(WithBaseURL(srv.URL), WithAPIKey("k"), WithModel("m"))
	require.NoError(t, err)
	res, err := a.Run(t.Context(), "hi")
	require.NoError(t, err)
	assert.Equal(t, "finally", res.Text)
	assert.Len(t, srv.Requests(), 3)
	assert.GreaterOrEqual(t, time.Since(first), 150*time.Millisecond, "Retry-After-Ms was not honoured")
}

func TestNetworkErrorIsWrapped(t *testing.T) {
	srv := robbytest.NewServer()
	url := srv.URL
	srv.Close()
	a, err := New(WithBaseURL(url), WithModel("m"), WithRequestOptions(option.WithMaxRetries(0)))
	require.NoError(t, err)
	_, err = a.Run(t.Context(), "hi")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "robby: chat completion:")
	assert.Contains(t, err.Error(), "connection refused")
}

// waitingTool is a tool that waits for its context to end; started closes
// when it is called, and cancelled records that it saw the end.
func waitingTool(name string) (tool Tool, started <-chan struct{}, cancelled *atomic.Bool) {
	start := make(chan struct{})
	cancelled = new(atomic.Bool)
	tool = FuncTool(name, "Waits", nil, func(ctx context.Context, _ map[string]any) (any, error) {
		close(start)
		<-ctx.Done()
		cancelled.Store(true)
		return nil, ctx.Err()
	})
	return tool, start, cancelled
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
			assert.Equal(t, ToolCall{ID: "call_0_add", Name: "add", Arguments: `{"a":20,"b":22}`}, ev.ToolCall)
		case EventToolResult:
			assert.Equal(t, "42", ev.ToolResult.Output)
			assert.Equal(t, ev.ToolCall, ev.ToolResult.Call)
		case EventDone:
			result = ev.Result
		}
	}
	assert.Equal(t, []string{"1:reasoning", "1:reasoning", "1:reasoning", "1:text", "1:text", "1:text",
		"1:tool-call", "1:tool-result", "1:turn-end", "2:text", "2:text", "2:text", "2:turn-end", "2:done"}, kinds)
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

func TestBuildingBlocksKeepMemoryAsTheLoopDoes(t *testing.T) {
	script := func(srv *robbytest.Server) {
		srv.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)), robbytest.Text("3"))
	}
	loopSrv := newServer(t)
	script(loopSrv)
	viaLoop := newTestAgent(t, loopSrv, WithTools(addTool))
	_, err := viaLoop.Run(t.Context(), "1+2?")
	require.NoError(t, err)

	blockSrv := newServer(t)
	script(blockSrv)
	blocks := newTestAgent(t, blockSrv, WithTools(addTool))
	blocks.AddMessages(openai.UserMessage("1+2?"))
	calls, err := blocks.ToolsCompletion(t.Context())
	require.NoError(t, err)
	require.Len(t, calls, 1)
	results, err := blocks.ExecuteToolCalls(t.Context(), calls)
	require.NoError(t, err)
	assert.Equal(t, "3", results[0].Output)
	text, err := blocks.ChatCompletion(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "3", text)

	assert.Equal(t, marshal(t, viaLoop.Messages()), marshal(t, blocks.Messages()))
}

func marshal(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestChatCompletionStream(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.Text("Hello there friend"), robbytest.Text("one two three"))
	a := newTestAgent(t, srv)
	a.AddMessages(openai.UserMessage("hi"))
	var deltas []string
	text, err := a.ChatCompletionStream(t.Context(), func(d string) error { deltas = append(deltas, d); return nil })
	require.NoError(t, err)
	assert.Equal(t, "Hello there friend", text)
	assert.Equal(t, []string{"Hello ", "there ", "friend"}, deltas)
	assert.Len(t, a.Messages(), 2)

	stop := errors.New("enough")
	a.AddMessages(openai.UserMessage("count"))
	text, err = a.ChatCompletionStream(t.Context(), func(d string) error { return stop })
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, "one ", text)
	assert.Len(t, a.Messages(), 3, "a stopped answer is not added")
}

func TestClonesHaveTheirOwnConversations(t *testing.T) {
	srv := newServer(t)
	echo := robbytest.Handler(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		var all []string
		for _, m := range body.Messages {
			all = append(all, m.Content)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": strings.Join(all, "|")}}}})
	})
	const n = 20
	for range 2 * n {
		srv.Reply(echo)
	}
	base := newTestAgent(t, srv, WithSystem("sys"))
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c := base.Clone()
			_, err := c.Run(t.Context(), fmt.Sprintf("first %d", i))
			assert.NoError(t, err)
			res, err := c.Run(t.Context(), fmt.Sprintf("second %d", i))
			assert.NoError(t, err)
			assert.Equal(t, fmt.Sprintf("sys|first %d|sys|first %d|second %d", i, i, i), res.Text)
		})
	}
	wg.Wait()
	assert.Len(t, base.Messages(), 1, "clones leave the original alone")
}

func TestConcurrentRunsOnOneAgentTakeTurns(t *testing.T) {
	srv := newServer(t)
	const n = 8
	for i := range n {
		srv.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":1}`)), robbytest.Text(fmt.Sprint("answer ", i)))
	}
	a := newTestAgent(t, srv, WithTools(addTool))
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, err := a.Run(t.Context(), fmt.Sprint("q", i))
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	msgs := a.Messages()
	assert.Len(t, msgs, 4*n)
	checkConsistent(t, msgs)
}

func TestWaitingForTheConversationHonoursContext(t *testing.T) {
	srv := newServer(t)
	inFirst := make(chan struct{})
	srv.Reply(robbytest.Handler(func(w http.ResponseWriter, r *http.Request) {
		close(inFirst)
		time.Sleep(200 * time.Millisecond)
		robbytest.Text("slow").ServeHTTP(w, r)
	}))
	a := newTestAgent(t, srv)
	go a.Run(t.Context(), "first")
	<-inFirst
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	_, err := a.Run(ctx, "second")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "waiting for the conversation")
	require.Eventually(t, func() bool { return len(a.Messages()) == 2 }, 2*time.Second, 10*time.Millisecond)
}

func TestClosedAgent(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv)
	require.NoError(t, a.Close())
	require.NoError(t, a.Close(), "Close is idempotent")
	_, err := a.Run(t.Context(), "hi")
	assert.ErrorIs(t, err, ErrClosed)
	_, err = a.Clone().ChatCompletion(t.Context())
	assert.ErrorIs(t, err, ErrClosed, "a clone of a closed agent is closed")

	b := newTestAgent(t, srv)
	require.NoError(t, b.Clone().Close())
	srv.Reply(robbytest.Text("still open"))
	res, err := b.Run(t.Context(), "hi")
	require.NoError(t, err, "closing a clone leaves the original open")
	assert.Equal(t, "still open", res.Text)
	assert.Len(t, srv.Requests(), 1)
}

func TestMemoryMethods(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv, WithSystem("sys"))
	a.AddMessages(openai.UserMessage("a"), openai.AssistantMessage("b"))
	msgs := a.Messages()
	require.Len(t, msgs, 3)
	msgs[0] = openai.UserMessage("changed")
	assert.NotNil(t, a.Messages()[0].OfSystem, "Messages returns a copy")
	a.SetMessages([]openai.ChatCompletionMessageParamUnion{openai.UserMessage("only")})
	assert.Len(t, a.Messages(), 1)
	a.Reset()
	assert.Len(t, a.Messages(), 1)
	assert.NotNil(t, a.Messages()[0].OfSystem)
}

func TestEnvironmentConfiguresTheEndpoint(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.Text("from env"))
	t.Setenv("OPENAI_BASE_URL", srv.URL)
	t.Setenv("OPENAI_API_KEY", "sk-env")
	a, err := New(WithModel("m"))
	require.NoError(t, err)
	res, err := a.Run(t.Context(), "hi")
	require.NoError(t, err)
	assert.Equal(t, "from env", res.Text)
	assert.Equal(t, "Bearer sk-env", srv.Requests()[0].Header.Get("Authorization"))
}

func TestWithClientAndRequestOptions(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.Text("ok"))
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-client"), option.WithHeader("X-Client", "mine"))
	a, err := New(WithClient(client), WithModel("m"), WithRequestOptions(option.WithHeader("X-Request", "yes")))
	require.NoError(t, err)
	_, err = a.Run(t.Context(), "hi")
	require.NoError(t, err)
	h := srv.Requests()[0].Header
	assert.Equal(t, "Bearer sk-client", h.Get("Authorization"))
	assert.Equal(t, "mine", h.Get("X-Client"))
	assert.Equal(t, "yes", h.Get("X-Request"))
}

func TestOptionalNullArgumentsAreLeftOut(t *testing.T) {
	type in struct {
		City string  `json:"city"`
		Unit *string `json:"unit,omitempty"`
	}
	var got []string
	weather := NewTool("weather", "", func(_ context.Context, a in) (string, error) {
		got = append(got, fmt.Sprint(a.City, " ", a.Unit == nil))
		return "sunny", nil
	})
	a := newTestAgent(t, newServer(t), WithTools(weather))
	results, err := a.ExecuteToolCalls(t.Context(), []ToolCall{
		{ID: "1", Name: "weather", Arguments: `{"city":"Paris","unit":null}`},
		{ID: "2", Name: "weather", Arguments: `{"city":null}`},
	})
	require.NoError(t, err)
	assert.Equal(t, "sunny", results[0].Output)
	assert.Equal(t, []string{"Paris true"}, got)
	assert.ErrorIs(t, results[1].Err, ErrInvalidArguments, "a required argument stays, and fails")
}

func TestApprovalCanRefuseACall(t *testing.T) {
	var asked []string
	var mu sync.Mutex
	approve := func(_ context.Context, c ToolCall) error {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, c.Name+" "+c.Arguments)
		if strings.Contains(c.Arguments, `"a":666`) {
			return errors.New("the operator said no")
		}
		return nil
	}
	srv := newServer(t)
	srv.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":1}`), robbytest.Call("add", `{"a":666,"b":1}`), robbytest.Call("nope", `{}`)),
		robbytest.Text("done"))
	a := newTestAgent(t, srv, WithTools(addTool), WithApproval(approve))
	res, err := a.Run(t.Context(), "go")
	require.NoError(t, err)
	assert.Equal(t, "2", res.ToolCalls[0].Output)
	assert.ErrorIs(t, res.ToolCalls[1].Err, ErrNotApproved)
	assert.Equal(t, `Error: tool "add": robby: tool call not approved: the operator said no`, res.ToolCalls[1].Output)
	assert.ElementsMatch(t, []string{`add {"a":1,"b":1}`, `add {"a":666,"b":1}`}, asked, "unknown tools are refused before approval")
	_, err = New(WithModel("m"), WithApproval(nil))
	assert.ErrorContains(t, err, "WithApproval")
}

func TestToolOutputIsMadeToFit(t *testing.T) {
	huge := FuncTool("huge", "", nil, func(context.Context, map[string]any) (any, error) {
		return strings.Repeat("é", 10<<20/2), nil // 10 MB
	})
	broken := FuncTool("broken", "", nil, func(context.Context, map[string]any) (any, error) {
		return "ok\xff\xfe done", nil
	})
	srv := newServer(t)
	srv.Reply(robbytest.ToolCalls(robbytest.Call("huge", `{}`), robbytest.Call("broken", `{}`)), robbytest.Text("done"))
	a := newTestAgent(t, srv, WithTools(huge, broken), WithMaxToolOutput(1001))
	res, err := a.Run(t.Context(), "go")
	require.NoError(t, err)
	out := res.ToolCalls[0].Output
	assert.True(t, strings.HasPrefix(out, strings.Repeat("é", 500)+"\n[robby: output truncated: the first 1000 of 10485760 bytes are shown]"), out[:60])
	assert.Equal(t, "ok\uFFFD done", res.ToolCalls[1].Output)
	tools := srv.Requests()[1].Messages[2:]
	assert.Less(t, len(tools[0].Content), 1100, "the model reads the cut output")
	assert.Equal(t, "ok\uFFFD done", tools[1].Content)
}

// TestAgentsReuseConnections: agents built one after another share the
// default transport, so conversations after the first open no connection.
func TestAgentsReuseConnections(t *testing.T) {
	srv := newServer(t)
	for i := range 5 {
		srv.Reply(robbytest.Text(fmt.Sprint("answer ", i)))
		a, err := New(WithBaseURL(srv.URL), WithAPIKey(""), WithModel("m"))
		require.NoError(t, err)
		_, err = a.Run(t.Context(), "hi")
		require.NoError(t, err)
		require.NoError(t, a.Close())
	}
	conns := map[string]bool{}
	for _, r := range srv.Requests() {
		conns[r.RemoteAddr] = true
	}
	assert.Len(t, conns, 1, "connections opened by 5 agents in a row")
}

// TestWholeNumbersFitIntegerArguments: models write 5.0 or 1e2 for an
// integer at times; JSON Schema counts them integers, and so does the
// typed tool. 2.5 stays an error the model reads.
func TestWholeNumbersFitIntegerArguments(t *testing.T) {
	srv := newServer(t)
	srv.Reply(
		robbytest.ToolCalls(
			robbytest.Call("add", `{"a":5.0,"b":1e2}`),
			robbytest.Call("add", `{"a":2.5,"b":1}`),
			robbytest.Call("add", `{"a":-3.000,"b":3}`),
		),
		robbytest.Text("done"),
	)
	a := newTestAgent(t, srv, WithTools(addTool))
	res, err := a.Run(t.Context(), "go")
	require.NoError(t, err)
	require.Len(t, res.ToolCalls, 3)
	assert.Equal(t, "105", res.ToolCalls[0].Output)
	assert.ErrorIs(t, res.ToolCalls[1].Err, ErrInvalidArguments)
	assert.Equal(t, "0", res.ToolCalls[2].Output)
}

// TestDefaultClientFollowsEnvironment: agents share one default openai-go
// client, which reads OPENAI_BASE_URL when built; an agent built after the
// variable changed uses the new value.
func TestDefaultClientFollowsEnvironment(t *testing.T) {
	for i := range 2 {
		srv := newServer(t)
		srv.Reply(robbytest.Text(fmt.Sprint("answer ", i)))
		t.Setenv("OPENAI_BASE_URL", srv.URL)
		a, err := New(WithAPIKey(""), WithModel("m"))
		require.NoError(t, err)
		res, err := a.Run(t.Context(), "hi")
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprint("answer ", i), res.Text)
		assert.Len(t, srv.Requests(), 1)
		require.NoError(t, a.Close())
	}
}

// TestAdminKeyIsNotSentForChat: an OpenAI admin key in the environment is
// for the administration API; chat completions never send it, with or
// without an API key.
func TestAdminKeyIsNotSentForChat(t *testing.T) {
	t.Setenv("OPENAI_ADMIN_KEY", "admin-secret")
	for _, key := range []string{"", "sk-test"} {
		srv := newServer(t)
		srv.Reply(robbytest.Text("ok"))
		a, err := New(WithBaseURL(srv.URL), WithAPIKey(key), WithModel("m"))
		require.NoError(t, err)
		_, err = a.Run(t.Context(), "hi")
		require.NoError(t, err)
		got := srv.Requests()[0].Header.Get("Authorization")
		assert.NotContains(t, got, "admin-secret")
		if key != "" {
			assert.Equal(t, "Bearer "+key, got)
		}
		require.NoError(t, a.Close())
	}
}
