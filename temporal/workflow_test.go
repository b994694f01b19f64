package temporal_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/temporal"
)

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

// newAdd returns a tool that adds, and the count of its calls.
func newAdd() (robby.Tool, *atomic.Int32) {
	var calls atomic.Int32
	return robby.NewTool("add", "Add two numbers", func(_ context.Context, in addArgs) (int, error) {
		calls.Add(1)
		return in.A + in.B, nil
	}), &calls
}

// newEnv returns a test workflow environment whose worker serves the agent
// "calc" over model, with opts.
func newEnv(t *testing.T, model *robbytest.Server, opts ...robby.Option) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	agent, err := robby.New(append([]robby.Option{robby.WithBaseURL(model.URL), robby.WithModel("m"),
		robby.WithAPIKey("sk-secret-never-in-history")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Close() })
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	temporal.Register(env, temporal.Agents{"calc": agent}, temporal.Options{})
	return env
}

func result(t *testing.T, env *testsuite.TestWorkflowEnvironment) *robby.Result {
	t.Helper()
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var res robby.Result
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	return &res
}

func TestWorkflowRunsToolsAsActivities(t *testing.T) {
	model := robbytest.NewServer()
	defer model.Close()
	model.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`), robbytest.Call("add", `{"a":3,"b":4}`)).WithUsage(10, 5),
		robbytest.Text("3 and 7").WithUsage(20, 3))
	add, calls := newAdd()
	env := newEnv(t, model, robby.WithTools(add))
	var tools atomic.Int32
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == temporal.ToolActivityName {
			tools.Add(1)
		}
	})
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.Request{Agent: "calc", Prompt: "add"})
	res := result(t, env)
	if res.Text != "3 and 7" || res.Turns != 2 || len(res.ToolCalls) != 2 || res.ToolCalls[1].Output != "7" {
		t.Errorf("result %+v", res)
	}
	if res.Usage.PromptTokens != 30 || len(res.Models) != 2 || len(res.Messages) != 5 {
		t.Errorf("usage %+v, models %v, %d messages; want 30 prompt tokens, 2 models, 5 messages", res.Usage, res.Models, len(res.Messages))
	}
	if calls.Load() != 2 || tools.Load() != 2 || len(model.Requests()) != 2 {
		t.Errorf("%d tool calls in %d activities, %d model requests; want 2, 2, 2", calls.Load(), tools.Load(), len(model.Requests()))
	}
}

func TestWorkflowTurnLimit(t *testing.T) {
	model := robbytest.NewServer()
	defer model.Close()
	model.Fallback(robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":1}`)))
	add, _ := newAdd()
	env := newEnv(t, model, robby.WithTools(add), robby.WithMaxTurns(2))
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.Request{Agent: "calc", Prompt: "loop"})
	var appErr *sdktemporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != "robby.MaxTurns" {
		t.Fatalf("error %v, want one of type robby.MaxTurns", err)
	}
	var res robby.Result
	if err := appErr.Details(&res); err != nil || res.Turns != 2 || len(res.ToolCalls) != 2 {
		t.Errorf("partial result %+v (%v), want 2 turns and their calls", res, err)
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("%d model requests, want 2", n)
	}
}

func TestWorkflowBudget(t *testing.T) {
	model := robbytest.NewServer()
	defer model.Close()
	model.Fallback(robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":1}`)).WithUsage(100, 10))
	add, _ := newAdd()
	env := newEnv(t, model, robby.WithTools(add), robby.WithBudget(robby.Budget{Tokens: 200}))
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.Request{Agent: "calc", Prompt: "spend"})
	var appErr *sdktemporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != "robby.Budget" {
		t.Fatalf("error %v, want one of type robby.Budget", err)
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("%d model requests, want 2: the second crossed 200 tokens", n)
	}
}

func TestWorkflowFanOutLimit(t *testing.T) {
	model := robbytest.NewServer()
	defer model.Close()
	model.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":1}`), robbytest.Call("add", `{"a":2,"b":2}`)),
		robbytest.Text("ok"))
	add, calls := newAdd()
	env := newEnv(t, model, robby.WithTools(add), robby.WithMaxToolCallsPerTurn(1))
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.Request{Agent: "calc", Prompt: "two"})
	res := result(t, env)
	if calls.Load() != 1 || !strings.Contains(res.ToolCalls[1].Output, "too many tool calls") {
		t.Errorf("%d calls run, second result %q; want 1 and a refusal", calls.Load(), res.ToolCalls[1].Output)
	}
}

func TestWorkflowApproval(t *testing.T) {
	model := robbytest.NewServer()
	defer model.Close()
	model.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`), robbytest.Call("add", `{"a":5,"b":5}`)),
		robbytest.Text("done"))
	add, calls := newAdd()
	env := newEnv(t, model, robby.WithTools(add.Destructive()))
	env.RegisterDelayedCallback(func() {
		p := progress(t, env)
		if len(p.AwaitingApproval) != 2 || calls.Load() != 0 {
			t.Errorf("awaiting approval %+v with %d calls run; want 2 and none", p.AwaitingApproval, calls.Load())
			return
		}
		for _, e := range p.Events {
			if e.Kind == robby.EventToolCall && !e.Destructive {
				t.Errorf("the call %+v awaiting approval is not marked destructive", e.ToolCall)
			}
		}
		env.SignalWorkflow(temporal.ApprovalSignal, temporal.Approval{CallID: p.AwaitingApproval[0].ID, Approved: true})
		env.SignalWorkflow(temporal.ApprovalSignal, temporal.Approval{CallID: p.AwaitingApproval[1].ID, Reason: "too big"})
	}, 48*time.Hour) // a person may take days
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.Request{Agent: "calc", Prompt: "add", Approve: []string{"add"}})
	res := result(t, env)
	if calls.Load() != 1 || res.ToolCalls[0].Output != "3" || !strings.Contains(res.ToolCalls[1].Output, "too big") {
		t.Errorf("%d calls run, results %+v; want the approved one run, the other refused", calls.Load(), res.ToolCalls)
	}
	if last := model.Requests()[1].Messages; !strings.Contains(last[len(last)-1].Content, "not approved: too big") {
		t.Errorf("the model read %+v", last[len(last)-1])
	}
}

func progress(t *testing.T, env *testsuite.TestWorkflowEnvironment) *temporal.Progress {
	t.Helper()
	v, err := env.QueryWorkflow(temporal.ProgressQuery)
	if err != nil {
		t.Fatal(err)
	}
	var p temporal.Progress
	if err := v.Get(&p); err != nil {
		t.Fatal(err)
	}
	return &p
}

var askUser = openai.FunctionDefinitionParam{
	Name:        "ask_user",
	Description: openai.String("Ask the user"),
	Parameters:  openai.FunctionParameters{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}},
}

func TestWorkflowCallerTools(t *testing.T) {
	model := robbytest.NewServer()
	defer model.Close()
	model.Reply(robbytest.ToolCalls(robbytest.Call("ask_user", `{"q":"how many?"}`)), robbytest.Text("a table for 4"))
	env := newEnv(t, model)
	env.RegisterDelayedCallback(func() {
		p := progress(t, env)
		if len(p.AwaitingResults) != 1 || p.AwaitingResults[0].Name != "ask_user" || p.Turns != 1 {
			t.Errorf("progress %+v, want one ask_user call awaited after 1 turn", p)
			return
		}
		env.SignalWorkflow(temporal.ToolResultsSignal, []robby.ToolResult{{Call: robby.ToolCall{ID: "unknown"}, Output: "x"}})
		env.SignalWorkflow(temporal.ToolResultsSignal, []robby.ToolResult{{Call: robby.ToolCall{ID: p.AwaitingResults[0].ID}, Output: "4"}})
	}, 72*time.Hour)
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.Request{Agent: "calc", Prompt: "book",
		CallerTools: []openai.FunctionDefinitionParam{askUser}})
	res := result(t, env)
	if res.Text != "a table for 4" || res.Turns != 2 {
		t.Errorf("result %+v", res)
	}
	if last := model.Requests()[1].Messages; last[len(last)-1].Content != "4" {
		t.Errorf("the model read %+v, want the user's answer", last[len(last)-1])
	}
}

func TestWorkflowCancel(t *testing.T) {
	model := robbytest.NewServer()
	defer model.Close()
	model.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)))
	add, calls := newAdd()
	env := newEnv(t, model, robby.WithTools(add))
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.Request{Agent: "calc", Prompt: "add", Approve: []string{"*"}})
	var canceled *sdktemporal.CanceledError
	if err := env.GetWorkflowError(); !errors.As(err, &canceled) {
		t.Errorf("error %v, want cancelled", err)
	}
	if calls.Load() != 0 {
		t.Error("a call waiting for approval ran after cancel")
	}
}

func TestWorkflowContinuesAsNew(t *testing.T) {
	model := robbytest.NewServer()
	defer model.Close()
	model.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)), robbytest.Text("3"))
	add, calls := newAdd()
	env := newEnv(t, model, robby.WithTools(add))
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.Request{Agent: "calc", Prompt: "add", TurnsPerRun: 1})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("error %v, want continue-as-new", err)
	}
	var next temporal.Request
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	c := next.Carried
	if c == nil || c.Result.Turns != 1 || len(c.Result.Messages) != 2 || len(c.Results) != 1 || c.Results[0].Output != "3" {
		t.Fatalf("carried %+v, want the first turn, its messages and the tool's result", c)
	}
	env = newEnv(t, model, robby.WithTools(add))
	env.ExecuteWorkflow(temporal.WorkflowName, next)
	res := result(t, env)
	if res.Text != "3" || res.Turns != 2 || len(res.Messages) != 4 || calls.Load() != 1 {
		t.Errorf("result %+v after %d calls; want the whole run's, the tool run once", res, calls.Load())
	}
	if msgs := model.Requests()[1].Messages; len(msgs) != 3 || msgs[0].Content != "add" {
		t.Errorf("the second turn sent %+v, want the carried conversation", msgs)
	}
}

func TestWorkflowUnknownAgent(t *testing.T) {
	model := robbytest.NewServer()
	defer model.Close()
	env := newEnv(t, model)
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.Request{Agent: "nobody", Prompt: "hi"})
	if err := env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), `no agent named "nobody"`) {
		t.Errorf("error %v, want no agent named nobody", err)
	}
	if n := len(model.Requests()); n != 0 {
		t.Errorf("%d model requests", n)
	}
}

func TestWorkflowModelErrorNotRetried(t *testing.T) {
	model := robbytest.NewServer()
	defer model.Close()
	model.Fallback(robbytest.Error(400, "bad request"))
	env := newEnv(t, model)
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.Request{Agent: "calc", Prompt: "hi"})
	if err := env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "bad request") {
		t.Errorf("error %v, want the endpoint's", err)
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1: a 400 is not retried", n)
	}
}

func TestWorkflowModelRetried(t *testing.T) {
	model := robbytest.NewServer()
	defer model.Close()
	model.Reply(robbytest.Error(503, "busy"), robbytest.Error(503, "busy"), robbytest.Error(503, "busy"), robbytest.Text("hello"))
	env := newEnv(t, model, robby.WithRequestOptions(option.WithMaxRetries(0)))
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.Request{Agent: "calc", Prompt: "hi"})
	if res := result(t, env); res.Text != "hello" {
		t.Errorf("text %q", res.Text)
	}
}
