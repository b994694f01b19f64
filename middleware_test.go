package robby

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/robby-go/robby/internal/chatwire"

	"github.com/robby-go/robby/robbytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// steps records the steps of middleware, in order, from any goroutine.
type steps struct {
	mu    sync.Mutex
	steps []string
}

func (t *steps) add(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.steps = append(t.steps, s)
}

func (t *steps) get() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.steps...)
}

func TestMiddlewareOrder(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":2,"b":3}`)), robbytest.Text("5"))
	var tr steps
	model := func(name string) ModelMiddleware {
		return func(ctx context.Context, req *ModelRequest, next ModelHandler) (*ModelResponse, error) {
			tr.add(name + " in")
			res, err := next(ctx, req)
			tr.add(name + " out")
			return res, err
		}
	}
	tool := func(name string) ToolMiddleware {
		return func(ctx context.Context, call ToolCall, next ToolHandler) (string, error) {
			tr.add(name + " in " + call.Name)
			out, err := next(ctx, call)
			tr.add(name + " out " + out)
			return out, err
		}
	}
	approve := func(_ context.Context, c ToolCall) error { tr.add("approve " + c.Name); return nil }
	a := newTestAgent(t, srv, WithTools(addTool), WithApproval(approve),
		WithModelMiddleware(model("m1"), model("m2")), WithToolMiddleware(tool("t1")), WithToolMiddleware(tool("t2")))

	res, err := a.Run(t.Context(), "2 + 3?")
	require.NoError(t, err)
	assert.Equal(t, "5", res.Text)
	assert.Equal(t, []string{
		"m1 in", "m2 in", "m2 out", "m1 out",
		"approve add", "t1 in add", "t2 in add", "t2 out 5", "t1 out 5",
		"m1 in", "m2 in", "m2 out", "m1 out",
	}, tr.get())
}

func TestModelMiddlewareSeesAndChangesTheRequest(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.Text("Hello."))
	var seen ModelRequest
	mw := func(ctx context.Context, req *ModelRequest, next ModelHandler) (*ModelResponse, error) {
		seen = *req
		req.Model = "other-model"
		req.Messages = append(req.Messages[:len(req.Messages):len(req.Messages)], chatwire.UserJSON("And be brief."))
		res, err := next(ctx, req)
		if err == nil {
			res.Text = strings.ToUpper(res.Text)
		}
		return res, err
	}
	a := newTestAgent(t, srv, WithSystem("sys"), WithTools(addTool), WithModelMiddleware(mw))

	res, err := a.Run(t.Context(), "Hi", WithRunSystem("run"))
	require.NoError(t, err)
	assert.Equal(t, "test-model", seen.Model)
	assert.False(t, seen.Stream)
	var roles []string
	for _, m := range seen.Messages {
		var v struct{ Role string }
		require.NoError(t, json.Unmarshal(m, &v))
		roles = append(roles, v.Role)
	}
	assert.Equal(t, []string{"system", "system", "user"}, roles, "the messages as sent, the run's system message included")
	require.Len(t, seen.Tools, 1)
	assert.Contains(t, string(seen.Tools[0]), `"name":"add"`)

	req := srv.Requests()[0]
	assert.Equal(t, "other-model", req.Model, "the model the middleware chose")
	require.Len(t, req.Messages, 4)
	assert.Equal(t, "And be brief.", req.Messages[3].Content)
	assert.Equal(t, "HELLO.", res.Text, "the response the middleware changed")
	assert.Equal(t, []string{"other-model"}, res.Models)
	msgs := a.Messages()
	require.Len(t, msgs, 3, "the conversation keeps what the run said, not what the middleware added")
	assert.Equal(t, "HELLO.", msgs[2].OfAssistant.Content.OfString.Value)
}

func TestModelMiddlewareRefuses(t *testing.T) {
	srv := newServer(t)
	refused := errors.New("no calls after hours")
	mw := func(context.Context, *ModelRequest, ModelHandler) (*ModelResponse, error) { return nil, refused }
	a := newTestAgent(t, srv, WithModelMiddleware(mw))
	before := a.Messages()
	for _, stream := range []bool{false, true} {
		_, _, err := faultAsk(t.Context(), a, stream, "Hi")
		require.ErrorIs(t, err, refused)
		assert.Equal(t, before, a.Messages(), "a refused call leaves the conversation as it was")
	}
	assert.Empty(t, srv.Requests())

	none := func(context.Context, *ModelRequest, ModelHandler) (*ModelResponse, error) { return nil, nil }
	b := newTestAgent(t, srv, WithModelMiddleware(none))
	_, err := b.Run(t.Context(), "Hi")
	require.ErrorContains(t, err, "neither a response nor an error")
}

// TestModelMiddlewareStreams checks that text streams through a middleware
// that calls next. A response made without next reaches the stream whole,
// with its tool calls run.
func TestModelMiddlewareStreams(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.Text("one two three"), robbytest.Text("done here"))
	var got []string
	pass := func(ctx context.Context, req *ModelRequest, next ModelHandler) (*ModelResponse, error) {
		assert.True(t, req.Stream)
		res, err := next(ctx, req)
		if res != nil {
			got = append(got, res.Text)
		}
		return res, err
	}
	a := newTestAgent(t, srv, WithModelMiddleware(pass))
	s := collectEvents(t, a.Stream(t.Context(), "Count"))
	require.NoError(t, s.err)
	assert.Equal(t, "one two three", s.text[1])
	assert.Equal(t, []string{"one two three"}, got, "the middleware sees the assembled reply")

	answered := 0
	short := func(_ context.Context, req *ModelRequest, _ ModelHandler) (*ModelResponse, error) {
		answered++
		if answered == 1 {
			return &ModelResponse{Model: "cache", ToolCalls: []ToolCall{{ID: "c1", Name: "add", Arguments: `{"a":1,"b":1}`}},
				FinishReason: "tool_calls", Usage: Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}}, nil
		}
		return &ModelResponse{Model: "cache", Text: "1 + 1 = 2", Reasoning: "easy", FinishReason: "stop"}, nil
	}
	b := newTestAgent(t, srv, WithTools(addTool), WithModelMiddleware(short))
	s = collectEvents(t, b.Stream(t.Context(), "1 + 1?"))
	require.NoError(t, s.err)
	assert.Equal(t, "1 + 1 = 2", s.text[2])
	assert.Equal(t, "easy", s.reasoning[2])
	require.Len(t, s.results, 1)
	assert.Equal(t, "2", s.results[0].Output)
	assert.Equal(t, []string{"cache", "cache"}, s.result.Models)
	assert.Equal(t, Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}, s.result.Usage)
	assert.Len(t, srv.Requests(), 1, "only the first agent's call reached the endpoint")
	checkConsistent(t, b.Messages())
}

func TestModelMiddlewareKeepsProviderFields(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.SSEFile("testdata/sse/gemini_thought_signature.sse"), robbytest.Text("ok"))
	pass := func(ctx context.Context, req *ModelRequest, next ModelHandler) (*ModelResponse, error) {
		return next(ctx, req)
	}
	rec := new(toolRecorder)
	a := newTestAgent(t, srv, WithTools(rec.tools()...), WithModelMiddleware(pass))
	s := collectEvents(t, a.Stream(t.Context(), "Go."))
	require.NoError(t, s.err)
	second := string(srv.Requests()[1].Body)
	assert.Contains(t, second, "thought_signature", "Gemini's signature goes back with its call")
}

func TestToolMiddlewareChangesOrRefusesCalls(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.ToolCalls(
		robbytest.Call("add", `{"a":2,"b":3}`),
		robbytest.Call("add", `{"a":1,"b":1}`),
		robbytest.Call("add", `{"a":7,"b":7}`),
		robbytest.Call("add", `{"a":9,"b":9}`),
	), robbytest.Text("done"))
	mw := func(ctx context.Context, call ToolCall, next ToolHandler) (string, error) {
		switch call.Arguments {
		case `{"a":2,"b":3}`:
			call.Arguments = `{"a":20,"b":30}`
		case `{"a":1,"b":1}`:
			call.Arguments = `{"a":"one"}`
		case `{"a":7,"b":7}`:
			return "", errors.New("sevens are not allowed")
		case `{"a":9,"b":9}`:
			panic("nines")
		}
		return next(ctx, call)
	}
	a := newTestAgent(t, srv, WithTools(addTool), WithToolMiddleware(mw))
	res, err := a.Run(t.Context(), "add")
	require.NoError(t, err)
	require.Len(t, res.ToolCalls, 4)
	assert.Equal(t, "50", res.ToolCalls[0].Output, "the changed arguments ran")
	assert.Equal(t, `{"a":2,"b":3}`, res.ToolCalls[0].Call.Arguments, "the result keeps the model's call")
	assert.ErrorIs(t, res.ToolCalls[1].Err, ErrInvalidArguments, "changed arguments are checked again")
	assert.Equal(t, `Error: tool "add": sevens are not allowed`, res.ToolCalls[2].Output)
	assert.ErrorIs(t, res.ToolCalls[3].Err, ErrToolPanic)
	checkConsistent(t, a.Messages())
}

func TestApprovalComesFirst(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":2,"b":3}`)), robbytest.Text("no"))
	inner := false
	mw := func(ctx context.Context, call ToolCall, next ToolHandler) (string, error) {
		inner = true
		return next(ctx, call)
	}
	deny := func(context.Context, ToolCall) error { return errors.New("not today") }
	a := newTestAgent(t, srv, WithTools(addTool), WithToolMiddleware(mw), WithApproval(deny))
	res, err := a.Run(t.Context(), "add")
	require.NoError(t, err)
	require.Len(t, res.ToolCalls, 1)
	assert.ErrorIs(t, res.ToolCalls[0].Err, ErrNotApproved)
	assert.Equal(t, `Error: tool "add": robby: tool call not approved: not today`, res.ToolCalls[0].Output)
	assert.False(t, inner, "a refused call reaches no other middleware")
}

func TestNilMiddlewareIsRefused(t *testing.T) {
	_, err := New(WithModel("m"), WithModelMiddleware(nil))
	require.ErrorContains(t, err, "WithModelMiddleware: nil middleware")
	_, err = New(WithModel("m"), WithToolMiddleware(nil))
	require.ErrorContains(t, err, "WithToolMiddleware: nil middleware")
}
