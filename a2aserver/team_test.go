package a2aserver_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/a2aserver"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/robbytest/agenttest"
)

// A team's call that waits for an approval: triage hands the task to math,
// whose call of add puts the task in INPUT_REQUIRED, naming math, nothing
// run; the client's yes runs it as math's, and math answers. With a store
// and without.
func TestTeamCallAskedThenApproved(t *testing.T) {
	for _, stored := range []bool{true, false} {
		t.Run(fmt.Sprint("stored=", stored), func(t *testing.T) {
			model := agenttest.NewServer(t)
			model.Fallback(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
				last := req.Messages[len(req.Messages)-1]
				switch {
				case strings.Contains(req.Messages[0].Content, "route"):
					return robbytest.ToolCalls(robbytest.Call("transfer_to_math", `{"reason":"a sum"}`))
				case last.Role == "tool":
					return robbytest.Text("1 + 2 = " + last.Content)
				default:
					return robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`))
				}
			}))
			math := agenttest.New(t, model, robby.WithName("math"), robby.WithSystem("You add."), robby.WithTools(addTool))
			triage := agenttest.New(t, model, robby.WithName("triage"), robby.WithSystem("You route the user."),
				robby.WithHandoffs(robby.Handoff{To: "math"}), robby.WithTeam(math))
			opts := a2aserver.Options{Tokens: tokens, Approve: []string{"add"}}
			if stored {
				opts.Store = agenttest.NewStore(t)
			}
			h := a2aserver.New(triage, opts)
			srv := httptest.NewServer(h)
			t.Cleanup(func() { srv.Close(); h.Close() })
			c := (&fixture{model: model, srv: srv, h: h}).client(t, "alice-token")

			task := send(t, c, message("What is 1 + 2?", ""))
			if task.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("read %s; want INPUT_REQUIRED", task.Status.State)
			}
			a := asked(t, task)
			calls, _ := a["approve"].([]any)
			if len(calls) != 1 || calls[0].(map[string]any)["name"] != "add" || a["agent"] != "math" {
				t.Fatalf("asked %v; want math's call of add", a)
			}
			n := len(model.Requests())
			got := answer(t, c, task, a2a.NewTextPart("yes"))
			if got.Status.State != a2a.TaskStateCompleted || artifactText(got) != "1 + 2 = 3" ||
				toolOutput(t, model, calls[0].(map[string]any)["id"].(string)) != "3" {
				t.Fatalf("after yes: %s %q", got.Status.State, artifactText(got))
			}
			if reqs := model.Requests()[n:]; len(reqs) != 1 || reqs[0].Messages[0].Content != "You add." {
				t.Errorf("after yes, %d model requests; want one, of math", len(reqs))
			}
		})
	}
}
