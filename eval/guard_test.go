package eval_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/eval"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/robbytest/agenttest"
)

// TestGuardChecks runs a dataset file's guard checks: a case that expects
// a block passes when the output or a tool call is blocked, a run a guard
// ended included, and fails, saying so, when nothing is.
func TestGuardChecks(t *testing.T) {
	srv := agenttest.NewServer(t)
	srv.Fallback(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		switch prompt := lastUser(req); {
		case req.Messages[len(req.Messages)-1].Role == "tool":
			return robbytest.Text("I may not.")
		case strings.Contains(prompt, "clean"):
			return robbytest.ToolCalls(robbytest.Call("shell_exec", `{"command":"rm -rf /"}`))
		case strings.Contains(prompt, "beast"):
			return robbytest.Text("The number of the beast.")
		}
		return robbytest.Text("Hello.")
	}))
	var ran []string
	shell := robby.NewTool("shell_exec", "Runs a command", func(_ context.Context, in struct {
		Command string `json:"command"`
	}) (string, error) {
		ran = append(ran, in.Command)
		return "done", nil
	})
	agent := agenttest.New(t, srv, robby.WithTools(shell), robby.WithGuards(
		robby.Guard{Name: "no-rm", On: robby.GuardToolCall, Tool: "shell*", Pattern: regexp.MustCompile(`rm\s+-rf`), Action: robby.Block},
		robby.Guard{Name: "no-beast", On: robby.GuardOutput, Pattern: regexp.MustCompile(`beast`), Action: robby.Block}))
	path := writeFile(t, "guards.jsonl", strings.Join([]string{
		`{"name": "output", "input": "the beast?", "checks": [{"guard": "blocked"}]}`,
		`{"name": "tool call", "input": "clean up", "checks": [{"guard": "blocked"}, {"contains": "may not"}]}`,
		`{"name": "nothing blocked", "input": "hi", "checks": [{"guard": "blocked"}]}`,
		`{"name": "allowed", "input": "hi", "checks": [{"guard": "allowed"}]}`,
		`{"name": "not allowed", "input": "the beast?", "checks": [{"guard": "allowed"}]}`,
	}, "\n")+"\n")
	d, err := eval.Load(path, nil)
	require.NoError(t, err)
	rep, err := eval.Run(t.Context(), d, agent, eval.WithConcurrency(1))
	require.NoError(t, err)
	require.Len(t, rep.Cases, 5)
	for i, ok := range []bool{true, true, false, true, false} {
		assert.Equal(t, ok, rep.Cases[i].OK, "%+v", rep.Cases[i])
	}
	assert.Empty(t, ran, "the blocked call never ran")
	assert.Equal(t, []string{"guard: no guard blocked anything"}, rep.Cases[2].Failures[0].Reasons)
	assert.Contains(t, rep.Cases[4].Failures[0].Reasons, `guard: guard "no-beast" blocked the output`)

	_, err = eval.Load(writeFile(t, "bad.jsonl", `{"input": "hi", "checks": [{"guard": "stopped"}]}`+"\n"), nil)
	assert.ErrorContains(t, err, `"stopped": give blocked or allowed`)
}
