package robby

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
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
			assert.LessOrEqual(t, strings.Count(err.Error(), "robby:"), 1, err.Error())
		})
	}
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
