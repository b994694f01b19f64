package robby_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

// A run of one turn returns the calls of the agent's own tools unrun, and
// the next turn, given their results, goes on from them.
func TestWithOneTurnLeavesToolsToTheCaller(t *testing.T) {
	model := scripted(
		robbytest.ToolCalls(robbytest.Call("count", `{}`)),
		robbytest.Text("done"),
	)
	defer model.Close()
	var runs atomic.Int32
	count := robby.NewTool("count", "Count", func(context.Context, struct{}) (int32, error) { return runs.Add(1), nil })
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"), robby.WithTools(count.Idempotent()))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	ctx := context.Background()
	res, err := agent.Run(ctx, "go", robby.WithOneTurn(0, robby.Budget{}))
	if err != nil || len(res.Pending) != 1 || res.Pending[0].Name != "count" || res.Turns != 1 || runs.Load() != 0 {
		t.Fatalf("first turn: %+v, %v, tool ran %d times", res, err, runs.Load())
	}
	results, err := agent.Clone().ExecuteToolCalls(ctx, res.Pending)
	if err != nil || results[0].Output != "1" {
		t.Fatalf("executing: %+v, %v", results, err)
	}
	res, err = agent.Resume(ctx, robby.WithOneTurn(1, robby.Budget{ModelCalls: 1}), robby.WithToolResults(results...))
	if err != nil || res.Text != "done" || res.Turns != 1 || len(res.Pending) != 0 {
		t.Fatalf("second turn: %+v, %v", res, err)
	}
	if got := model.Requests()[1].Messages; got[len(got)-1].Content != "1" {
		t.Errorf("the model read %+v, want the tool's result last", got[len(got)-1])
	}
}

// The turns and spending of the steps before count against the agent's
// limits.
func TestWithOneTurnKeepsLimits(t *testing.T) {
	model := scripted()
	defer model.Close()
	model.Fallback(robbytest.Text("hi"))
	tool := robby.NewTool("t", "T", func(context.Context, struct{}) (string, error) { return "", nil })
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"), robby.WithTools(tool),
		robby.WithMaxTurns(3), robby.WithMaxToolCallsPerTurn(2), robby.WithToolTimeout(time.Minute),
		robby.WithBudget(robby.Budget{ModelCalls: 5}))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	want := robby.Limits{MaxTurns: 3, MaxToolCallsPerTurn: 2, ToolTimeout: time.Minute, Budget: robby.Budget{ModelCalls: 5}}
	if got := agent.Limits(); got != want {
		t.Errorf("Limits() = %+v, want %+v", got, want)
	}
	if tool.IsIdempotent() || !tool.Idempotent().IsIdempotent() {
		t.Error("IsIdempotent does not tell Idempotent's mark")
	}
	ctx := context.Background()
	if _, err := agent.Run(ctx, "go", robby.WithOneTurn(3, robby.Budget{})); !errors.Is(err, robby.ErrMaxTurns) {
		t.Errorf("turn 4 of 3: %v, want ErrMaxTurns", err)
	}
	if _, err := agent.Run(ctx, "go", robby.WithOneTurn(1, robby.Budget{ModelCalls: 5})); !errors.Is(err, robby.ErrBudget) {
		t.Errorf("sixth call of 5: %v, want ErrBudget", err)
	}
	if res, err := agent.Run(ctx, "go", robby.WithOneTurn(2, robby.Budget{ModelCalls: 4})); err != nil || res.Text != "hi" {
		t.Errorf("last turn: %+v, %v", res, err)
	}
	if _, err := agent.Run(ctx, "go", robby.WithOneTurn(-1, robby.Budget{})); err == nil {
		t.Error("negative turns accepted")
	}
}

// A tool result goes through JSON with its error as text.
func TestToolResultJSON(t *testing.T) {
	for _, r := range []robby.ToolResult{
		{Call: robby.ToolCall{ID: "c1", Name: "t", Arguments: `{"a":1}`}, Output: "ok", Duration: time.Second},
		{Call: robby.ToolCall{ID: "c2", Name: "t", Arguments: "{}"}, Output: "Error: boom", Err: errors.New("boom")},
	} {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var got robby.ToolResult
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if got.Call != r.Call || got.Output != r.Output || got.Duration != r.Duration || (got.Err == nil) != (r.Err == nil) ||
			r.Err != nil && got.Err.Error() != r.Err.Error() {
			t.Errorf("%s decoded to %+v, want %+v", b, got, r)
		}
	}
}
