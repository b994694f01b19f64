package temporal_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/temporal"
)

// A durable run is guarded as a run is: a blocked call never runs, and a
// blocked answer ends the run, not retried.
func TestWorkflowGuards(t *testing.T) {
	model := robbytest.NewServer()
	defer model.Close()
	model.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":666}`), robbytest.Call("add", `{"a":3,"b":4}`)),
		robbytest.Text("7, and the number of the beast"))
	add, calls := newAdd()
	env := newEnv(t, model, robby.WithTools(add), robby.WithGuards(
		robby.Guard{Name: "no-beast", On: robby.GuardToolCall, Tool: "add", Pattern: regexp.MustCompile(`666`), Action: robby.Block},
		robby.Guard{Name: "no-beast-out", On: robby.GuardOutput, Pattern: regexp.MustCompile(`beast`), Action: robby.Block}))
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.Request{Agent: "calc", Prompt: "add"})
	err := env.GetWorkflowError()
	if err == nil || !strings.Contains(err.Error(), `guard "no-beast-out" blocked the output`) {
		t.Errorf("error %v, want the output guard's block", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("add ran %d times, want 1: the call with 666 is blocked", n)
	}
	second := model.Requests()[1].Messages
	if !strings.Contains(second[2].Content, `guard "no-beast" blocked the tool_call of "add"`) {
		t.Errorf("the model read %q for the blocked call", second[2].Content)
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("%d model requests, want 2: a block is not retried", n)
	}
}
