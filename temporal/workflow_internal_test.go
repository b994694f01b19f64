package temporal

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

func newTestEnv(t *testing.T, model *robbytest.Server, tool robby.Tool) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"), robby.WithTools(tool))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Close() })
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	Register(env, Agents{"calc": agent}, Options{})
	return env
}

// A call of a tool that may not run twice is not retried when its
// activity fails; an idempotent tool's is, with backoff.
func TestWorkflowRetriesOnlyIdempotentTools(t *testing.T) {
	for _, idempotent := range []bool{false, true} {
		model := robbytest.NewServer()
		model.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)), robbytest.Text("ok"))
		add := robby.NewTool("add", "Add", func(context.Context, struct{}) (int, error) { return 0, nil })
		if idempotent {
			add = add.Idempotent()
		}
		env := newTestEnv(t, model, add)
		var attempts atomic.Int32
		env.OnActivity(ToolActivityName, mock.Anything, mock.Anything).Return(
			func(context.Context, toolInput) (robby.ToolResult, error) {
				attempts.Add(1)
				return robby.ToolResult{}, errors.New("worker lost")
			})
		env.ExecuteWorkflow(WorkflowName, Request{Agent: "calc", Prompt: "add"})
		var res robby.Result
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatal(err)
		}
		out := res.ToolCalls[0].Output
		switch {
		case !idempotent && (attempts.Load() != 1 || !strings.Contains(out, "interrupted")):
			t.Errorf("non-idempotent: %d attempts, model read %q; want 1 and interrupted", attempts.Load(), out)
		case idempotent && (attempts.Load() != 5 || !strings.Contains(out, "worker lost")):
			t.Errorf("idempotent: %d attempts, model read %q; want 5 and the error", attempts.Load(), out)
		}
		model.Close()
	}
}
