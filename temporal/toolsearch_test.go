package temporal_test

import (
	"slices"
	"testing"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/temporal"
)

// TestWorkflowToolSearch: a durable run finds a deferred tool with
// search_tools, then calls it in a tool activity, on an agent that does
// not hold the conversation.
func TestWorkflowToolSearch(t *testing.T) {
	model := robbytest.NewServer()
	defer model.Close()
	model.Reply(robbytest.ToolCalls(robbytest.Call(robby.SearchToolsName, `{"query":"add numbers"}`)),
		robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)),
		robbytest.Text("3"))
	add, calls := newAdd()
	env := newEnv(t, model, robby.WithTools(add.Deferred()))
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.Request{Agent: "calc", Prompt: "1 + 2?"})
	res := result(t, env)
	if res.Text != "3" || calls.Load() != 1 || len(res.ToolCalls) != 2 || res.ToolCalls[1].Output != "3" {
		t.Fatalf("result %+v, %d calls of add", res, calls.Load())
	}
	reqs := model.Requests()
	if len(reqs) != 3 || slices.Contains(reqs[0].Tools, "add") || !slices.Contains(reqs[1].Tools, "add") {
		t.Errorf("tools offered: %v; want add absent from the first request, offered from the second", [][]string{reqs[0].Tools, reqs[1].Tools})
	}
}
