package main

// A2A's official JS client (@a2a-js/sdk) against `robby serve -a2a` with a
// scripted model and a real MCP server's tools. See testdata/node_a2a.mjs.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// requireA2AModules returns node and the directory of the @a2a-js/sdk that
// .ci/install-mcp.sh installs: without it the test is skipped, or fails
// under CI.
func requireA2AModules(t *testing.T) (node, modules string) {
	t.Helper()
	s := requireNodeSDK(t)
	modules, err := filepath.Abs(filepath.Join("..", "..", ".bench", "a2a", "node_modules"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(modules, "@a2a-js", "sdk", "package.json")); err != nil {
		benchMissing(t, "npm @a2a-js/sdk is not installed: %v", err)
	}
	return s.node, modules
}

func TestNodeA2AClientAgainstServe(t *testing.T) {
	node, modules := requireA2AModules(t)
	srv := upstream(t,
		// The completed task: a tool of the MCP server, then the answer.
		robbytest.ToolCalls(robbytest.Call("echo", `{"message":"ping"}`)),
		robbytest.Text("Echoed ping."),
		// The streamed one.
		robbytest.ToolCalls(robbytest.Call("echo", `{"message":"stream"}`)),
		robbytest.Pieces("Streamed ", "in ", "pieces.").WithDelay(20*time.Millisecond),
		// The second message in the first context: its history.
		robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			var seen []string
			for _, m := range req.Messages {
				seen = append(seen, m.Role)
			}
			return robbytest.Text(strings.Join(seen, ","))
		}),
		// The call approved: the model reads the tool's result.
		robbytest.ToolCalls(robbytest.Call("get-sum", `{"a":2,"b":3}`)),
		robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			return robbytest.Text("Read: " + req.Messages[len(req.Messages)-1].Content)
		}),
		// The task cancelled.
		robbytest.Text("too late").WithDelay(time.Minute),
	)
	base, serveLog := serveInProcess(t, "-base-url", srv.URL, "-model", "agent", "-a2a",
		"-token", "alice:alice-token", "-token", "bob:bob-token",
		"-store", filepath.Join(t.TempDir(), "tasks.db"), "-mcp", mcpConfig(t), "-approve", "get-sum")
	root := strings.TrimSuffix(base, "/v1")
	sdk := nodeSDK{node: node}
	_, steps := sdk.run(t, serveLog, []string{"A2A_MODULES=" + modules}, "node_a2a.mjs", root, "alice-token", "bob-token")

	card := nodeStep[struct {
		Name       string
		Skills     []string
		Schemes    []string
		Interfaces []string
	}](t, steps, "card")
	assert.Contains(t, card.Skills, "echo")
	assert.Equal(t, []string{"bearer"}, card.Schemes)
	assert.Contains(t, card.Interfaces, "JSONRPC "+root+"/a2a")

	type task struct {
		State, Answer, ContextID, ID string
		NewTask                      bool
	}
	done := nodeStep[task](t, steps, "completed")
	assert.Equal(t, "TASK_STATE_COMPLETED", done.State)
	assert.Equal(t, "Echoed ping.", done.Answer)

	streamed := nodeStep[struct {
		Events []string
		Answer string
	}](t, steps, "streamed")
	assert.Equal(t, "Streamed in pieces.", streamed.Answer)
	require.NotEmpty(t, streamed.Events)
	assert.Equal(t, "task", streamed.Events[0])
	assert.Subset(t, streamed.Events, []string{"status:TASK_STATE_WORKING:toolCall", "status:TASK_STATE_WORKING:toolResult",
		"artifact", "artifact:last", "status:TASK_STATE_COMPLETED"})
	assert.Equal(t, "status:TASK_STATE_COMPLETED", streamed.Events[len(streamed.Events)-1])

	second := nodeStep[task](t, steps, "sameContext")
	assert.Equal(t, done.ContextID, second.ContextID)
	assert.True(t, second.NewTask)
	assert.Equal(t, "user,assistant,tool,assistant,user", second.Answer, "the second run reads the first exchange")

	approval := nodeStep[struct {
		Asking, Said, State, Answer string
		Asked                       []struct{ Name, Arguments string }
		SameTask                    bool
	}](t, steps, "approval")
	assert.Equal(t, "TASK_STATE_INPUT_REQUIRED", approval.Asking)
	assert.Contains(t, approval.Said, `get-sum {"a":2,"b":3}`)
	require.Len(t, approval.Asked, 1)
	assert.Equal(t, "get-sum", approval.Asked[0].Name)
	assert.Equal(t, "TASK_STATE_COMPLETED", approval.State)
	assert.True(t, approval.SameTask)
	assert.Contains(t, approval.Answer, "Read: ")
	assert.Contains(t, approval.Answer, "5", "the approved call ran")

	cancel := nodeStep[struct{ First, Cancelled, Reread string }](t, steps, "cancel")
	assert.Equal(t, "TASK_STATE_CANCELED", cancel.Cancelled)
	assert.Equal(t, "TASK_STATE_CANCELED", cancel.Reread)

	other := nodeStep[struct {
		Get, Cancel         string
		Listed, AliceListed int
	}](t, steps, "otherUser")
	assert.Contains(t, other.Get, "TaskNotFound")
	assert.Contains(t, other.Cancel, "TaskNotFound")
	assert.Zero(t, other.Listed)
	assert.Equal(t, 5, other.AliceListed, "Alice lists her five tasks: the client's unset status filter selects all")
	wrong := nodeStep[struct{ Send string }](t, steps, "wrongToken")
	assert.Contains(t, wrong.Send, "401")
}
