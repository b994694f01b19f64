package a2aserver_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/a2aserver"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/robbytest/agenttest"
)

// call is a tool call of the scripted model, of ID call_1.
func call(name, arguments string) robbytest.ToolCall {
	c := robbytest.Call(name, arguments)
	c.ID = "call_1"
	return c
}

// answer sends a message on a task waiting for input, and returns the task
// it answers with.
func answer(t *testing.T, c *a2aclient.Client, task *a2a.Task, part *a2a.Part) *a2a.Task {
	t.Helper()
	return send(t, c, &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, part)})
}

// send sends a message and returns the task it answers with.
//
// A task the store shows asking may still be in a2a-go's hands for a moment:
// its executions manager stores the task before it marks the execution as
// ending, and refuses a message meanwhile ("task execution is already in
// progress"). send tries again then, for up to five seconds, as a client would.
func send(t *testing.T, c *a2aclient.Client, req *a2a.SendMessageRequest) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(t.Context(), req)
	for deadline := time.Now().Add(5 * time.Second); err != nil && strings.Contains(err.Error(), "already in progress") &&
		time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		res, err = c.SendMessage(t.Context(), req)
	}
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("%#v: want a task", res)
	}
	return task
}

// asked is the data part of a task's status message: what it asks for.
func asked(t *testing.T, task *a2a.Task) map[string]any {
	t.Helper()
	if task.Status.State != a2a.TaskStateInputRequired || task.Status.Message == nil {
		t.Fatalf("task %s, message %v: want INPUT_REQUIRED, saying what for", task.Status.State, task.Status.Message)
	}
	for _, p := range task.Status.Message.Parts {
		if d, ok := p.Content.(a2a.Data); ok {
			return d.Value.(map[string]any)
		}
	}
	t.Fatalf("status message %+v holds no data part", task.Status.Message)
	return nil
}

// toolOutput is what the model read as the result of the call with id, in
// the last request.
func toolOutput(t *testing.T, model *robbytest.Server, id string) string {
	t.Helper()
	reqs := model.Requests()
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "tool" && m.ToolCallID == id {
			return m.Content
		}
	}
	t.Fatalf("the last request holds no result for %s", id)
	return ""
}

func TestApprovalAskedThenGiven(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   a2aserver.Options
		answer *a2a.Part
		want   string // what the model reads as the tool's result
	}{
		{"yes in memory", a2aserver.Options{Approve: []string{"add"}}, a2a.NewTextPart(" Yes "), "3"},
		{"no", a2aserver.Options{Approve: []string{"*"}}, a2a.NewTextPart("no"), "not approved: the client said no"},
		{"data stored", a2aserver.Options{Approve: []string{"add"}, Store: agenttest.NewStore(t)},
			a2a.NewDataPart(map[string]any{"approvals": []any{map[string]any{"id": "call_1", "approved": true}}}), "3"},
		{"data refused", a2aserver.Options{Approve: []string{"add"}},
			a2a.NewDataPart(map[string]any{"approvals": []any{map[string]any{"id": "call_1", "approved": false, "reason": "too big"}}}), "too big"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.opts,
				robbytest.ToolCalls(call("add", `{"a":1,"b":2}`)), robbytest.Text("Done."))
			c := f.client(t, "alice-token")
			task := send(t, c, message("What is 1 + 2?", ""))
			approve, _ := asked(t, task)["approve"].([]any)
			if len(approve) != 1 || approve[0].(map[string]any)["name"] != "add" || approve[0].(map[string]any)["arguments"] != `{"a":1,"b":2}` {
				t.Fatalf("asked %v: want the add call to approve", asked(t, task))
			}
			if n := len(f.model.Requests()); n != 1 {
				t.Fatalf("%d model requests before the answer: want 1", n)
			}
			// Bob cannot answer Alice's task.
			m := a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewTextPart("yes"))
			if _, err := f.client(t, "bob-token").SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m}); err == nil {
				t.Fatal("Bob answered Alice's task")
			}
			got := answer(t, c, task, tc.answer)
			if got.Status.State != a2a.TaskStateCompleted || artifactText(got) != "Done." {
				t.Fatalf("after the answer: %s %q, want completed, Done.", got.Status.State, artifactText(got))
			}
			if out := toolOutput(t, f.model, "call_1"); !strings.Contains(out, tc.want) {
				t.Errorf("the model read %q: want %q", out, tc.want)
			}
		})
	}
}

func TestApprovalAnswerUnreadAsksAgain(t *testing.T) {
	f := newFixture(t, a2aserver.Options{Approve: []string{"add"}},
		robbytest.ToolCalls(call("add", `{"a":1,"b":2}`)), robbytest.Text("Done."))
	c := f.client(t, "alice-token")
	task := send(t, c, message("What is 1 + 2?", ""))
	got := answer(t, c, task, a2a.NewTextPart("maybe"))
	asked(t, got)
	if text, _ := got.Status.Message.Parts[0].Content.(a2a.Text); !strings.Contains(string(text), `answer "yes" or "no"`) {
		t.Errorf("asked again %q: want why the answer was not read", text)
	}
	got = answer(t, c, task, a2a.NewDataPart(map[string]any{"approvals": []any{map[string]any{"id": "call_9", "approved": true}}}))
	asked(t, got)
	got = answer(t, c, task, a2a.NewTextPart("yes"))
	if got.Status.State != a2a.TaskStateCompleted || toolOutput(t, f.model, "call_1") != "3" {
		t.Fatalf("after yes: %s, want completed with the tool run", got.Status.State)
	}
}

func TestApprovalNotNeededRunsOn(t *testing.T) {
	f := newFixture(t, a2aserver.Options{Approve: []string{"delete"}},
		robbytest.ToolCalls(call("add", `{"a":1,"b":2}`)), robbytest.Text("Done."))
	if task := send(t, f.client(t, "alice-token"), message("What is 1 + 2?", "")); task.Status.State != a2a.TaskStateCompleted || toolOutput(t, f.model, "call_1") != "3" {
		t.Fatalf("task %s: a call that needs no approval runs at once", task.Status.State)
	}
}

// lookup is a tool the client runs.
var lookup = openai.FunctionDefinitionParam{Name: "lookup", Description: openai.String("Looks a word up, on the client.")}

func TestCallerToolResultGiven(t *testing.T) {
	f := newFixture(t, a2aserver.Options{CallerTools: []openai.FunctionDefinitionParam{lookup}},
		robbytest.ToolCalls(call("lookup", `{"word":"robby"}`)), robbytest.Text("A robot."))
	c := f.client(t, "alice-token")
	task := send(t, c, message("What is robby?", ""))
	calls, _ := asked(t, task)["toolCalls"].([]any)
	if len(calls) != 1 || calls[0].(map[string]any)["name"] != "lookup" {
		t.Fatalf("asked %v: want the lookup call", asked(t, task))
	}
	if got := f.model.Requests()[0].Tools; !strings.Contains(strings.Join(got, " "), "lookup") {
		t.Errorf("the model was offered %v: want lookup too", got)
	}
	got := answer(t, c, task, a2a.NewDataPart(map[string]any{
		"toolResults": []any{map[string]any{"id": "call_1", "output": "a Go agent library"}}}))
	if got.Status.State != a2a.TaskStateCompleted || artifactText(got) != "A robot." {
		t.Fatalf("after the result: %s %q", got.Status.State, artifactText(got))
	}
	if out := toolOutput(t, f.model, "call_1"); out != "a Go agent library" {
		t.Errorf("the model read %q", out)
	}
}

func TestInputRequiredOutlivesTheHandler(t *testing.T) {
	opts := a2aserver.Options{Approve: []string{"add"}, Store: agenttest.NewStore(t)}
	f := newFixture(t, opts, robbytest.ToolCalls(call("add", `{"a":1,"b":2}`)), robbytest.Text("Done."))
	task := send(t, f.client(t, "alice-token"), message("What is 1 + 2?", ""))
	f.h.Close()
	f.srv.Close()

	g := f.replica(t, opts)
	c := g.client(t, "alice-token")
	got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	asked(t, got)
	got = answer(t, c, got, a2a.NewTextPart("yes"))
	if got.Status.State != a2a.TaskStateCompleted || toolOutput(t, g.model, "call_1") != "3" {
		t.Fatalf("answered on another handler: %s, want completed with the tool run", got.Status.State)
	}
}

func TestNewMessageInsteadOfTheAnswerRunsNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store bool
	}{{"memory", false}, {"store", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var ran atomic.Int32
			wipe := robby.NewTool("wipe", "Wipes the disk", func(context.Context, struct{}) (string, error) {
				ran.Add(1)
				return "wiped", nil
			}).Idempotent() // a stored conversation runs such a call again after a crash
			model := agenttest.NewServer(t, robbytest.ToolCalls(call("wipe", `{}`)), robbytest.Text("Something else, then."))
			opts := a2aserver.Options{Tokens: tokens, Approve: []string{"wipe"}}
			if tc.store {
				opts.Store = agenttest.NewStore(t)
			}
			f := &fixture{model: model, h: a2aserver.New(agenttest.New(t, model, robby.WithTools(wipe)), opts)}
			f.srv = httptest.NewServer(f.h)
			t.Cleanup(func() { f.srv.Close(); f.h.Close() })
			c := f.client(t, "alice-token")
			first := send(t, c, message("Wipe it.", ""))
			asked(t, first)
			if got := send(t, c, message("Never mind. Something else?", first.ContextID)); got.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("the new task: %s", got.Status.State)
			}
			if out := toolOutput(t, model, "call_1"); ran.Load() != 0 || !strings.Contains(out, "not approved: a new message came") {
				t.Errorf("the call ran %d times, the model read %q: want it refused, not run", ran.Load(), out)
			}
		})
	}
}
