package robby

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robby-go/robby/robbytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
