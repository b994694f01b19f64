package temporal_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/openai/openai-go/v3"
	"go.temporal.io/sdk/client"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/a2aserver"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/temporal"
)

// durableA2A serves A2A tasks with opts, run as workflows of the agent
// "calc" on the task queue "a2a", and returns a2a-go's client of it.
func durableA2A(t *testing.T, c client.Client, opts a2aserver.Options) *a2aclient.Client {
	t.Helper()
	agent, err := robby.New(robby.WithBaseURL("http://127.0.0.1:1"), robby.WithModel("unused"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Close() })
	opts.Durable = &temporal.TaskRunner{Client: c, TaskQueue: "a2a", Agent: "calc"}
	h := a2aserver.New(agent, opts)
	hs := httptest.NewServer(h)
	t.Cleanup(func() { hs.Close(); h.Close() })
	card, err := agentcard.NewResolver(hs.Client()).Resolve(t.Context(), hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	ac, err := a2aclient.NewFromCard(t.Context(), card)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ac.Destroy() })
	return ac
}

// An A2A task run as a workflow, streamed with a2a-go's client: the tool
// call and its result, then the answer, come from the workflow's
// progress; the task ends completed, its workflow's result the answer, and
// the context's conversation holds the exchange.
func TestA2ATaskOnTemporal(t *testing.T) {
	c, calls, store := calcWorker(t, "a2a")
	client := durableA2A(t, c, a2aserver.Options{Store: store})

	var kinds []string
	var text string
	var id a2a.TaskID
	for e, err := range client.SendStreamingMessage(t.Context(), &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("What is 2 + 3?"))}) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := e.(type) {
		case *a2a.Task:
			kinds, id = append(kinds, "task"), e.ID
		case *a2a.TaskStatusUpdateEvent:
			k := string(e.Status.State)
			if m := e.Status.Message; m != nil {
				for key := range m.Parts[0].Content.(a2a.Data).Value.(map[string]any) {
					k += ":" + key
				}
			}
			kinds = append(kinds, k)
		case *a2a.TaskArtifactUpdateEvent:
			kinds = append(kinds, fmt.Sprintf("artifact(last=%v)", e.LastChunk))
			text = string(e.Artifact.Parts[0].Content.(a2a.Text))
		}
	}
	want := "task TASK_STATE_WORKING TASK_STATE_WORKING:toolCall TASK_STATE_WORKING:toolResult " +
		"artifact(last=false) artifact(last=true) TASK_STATE_COMPLETED"
	if got := strings.Join(kinds, " "); got != want || text != "2 + 3 = 5" || calls.Load() != 1 {
		t.Errorf("streamed %s, %q, %d calls\nwant %s, the answer, 1", got, text, calls.Load(), want)
	}
	task, err := client.GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 || len(task.History) != 3 {
		t.Errorf("read %s, %d artifacts, %d messages; want completed, 1, 3 (the message, the call, the result)",
			task.Status.State, len(task.Artifacts), len(task.History))
	}
	res, err := temporal.Attach(c, "a2a-"+string(id)).Result(t.Context())
	if err != nil || res.Text != "2 + 3 = 5" {
		t.Errorf("the task's workflow: %v, %v", res, err)
	}
	_, msgs, err := store.Load(t.Context(), "", task.ContextID)
	if err != nil || len(msgs) != 4 {
		t.Errorf("the context's conversation: %d messages, %v; want 4 (the message, the call, the result, the answer)", len(msgs), err)
	}
}

// askToAdd sends the question whose answer calls add, and returns its task,
// which waits for the call's approval, nothing run.
func askToAdd(t *testing.T, client *a2aclient.Client, calls *atomic.Int32) *a2a.Task {
	t.Helper()
	res, err := client.SendMessage(t.Context(), &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("What is 2 + 3?"))})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	if task.Status.State != a2a.TaskStateInputRequired || calls.Load() != 0 {
		t.Fatalf("read %s, %d calls; want INPUT_REQUIRED, none run", task.Status.State, calls.Load())
	}
	return task
}

// A durable A2A task whose workflow waits for an approval reads
// INPUT_REQUIRED, asking for the call, and nothing runs; the client's "yes"
// approves it on the workflow, which runs the tool and completes the task.
func TestA2ATaskApprovedOnTemporal(t *testing.T) {
	c, calls, store := calcWorker(t, "a2a")
	client := durableA2A(t, c, a2aserver.Options{Store: store, Approve: []string{"add"}})
	task := askToAdd(t, client, calls)
	ask := task.Status.Message.Parts[1].Content.(a2a.Data).Value.(map[string]any)["approve"].([]any)
	if len(ask) != 1 || ask[0].(map[string]any)["name"] != "add" {
		t.Fatalf("asked to approve %v; want the call of add", ask)
	}
	res, err := client.SendMessage(t.Context(), &a2a.SendMessageRequest{
		Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewTextPart("yes"))})
	if err != nil {
		t.Fatal(err)
	}
	task = res.(*a2a.Task)
	if task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 || calls.Load() != 1 {
		t.Fatalf("read %s, %d artifacts, %d calls; want completed, the answer, 1", task.Status.State, len(task.Artifacts), calls.Load())
	}
	if got := string(task.Artifacts[0].Parts[0].Content.(a2a.Text)); got != "2 + 3 = 5" {
		t.Errorf("the answer: %q", got)
	}
}

// A new message in the context of a durable task waiting for an approval
// comes instead of the answer: the waiting task reads CANCELED, saying
// why, its workflow ends cancelled with the tool never run, and the new
// task runs on the context's conversation.
func TestA2ANewMessageCancelsTheWaitingTask(t *testing.T) {
	c, calls, store := calcWorker(t, "a2a")
	client := durableA2A(t, c, a2aserver.Options{Store: store, Approve: []string{"add"}})
	waiting := askToAdd(t, client, calls)
	next := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("Never mind: just say it."))
	next.ContextID = waiting.ContextID
	res, err := client.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: next})
	if err != nil {
		t.Fatal(err)
	}
	if task := res.(*a2a.Task); task.ID == waiting.ID || task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("the new message's task: %s, %s; want another task, completed", task.ID, task.Status.State)
	}
	old, err := client.GetTask(t.Context(), &a2a.GetTaskRequest{ID: waiting.ID})
	if err != nil {
		t.Fatal(err)
	}
	if old.Status.State != a2a.TaskStateCanceled || old.Status.Message == nil ||
		!strings.Contains(string(old.Status.Message.Parts[0].Content.(a2a.Text)), "new message") {
		t.Errorf("the waiting task reads %s, %+v; want CANCELED, saying why", old.Status.State, old.Status.Message)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := temporal.Attach(c, "a2a-"+string(waiting.ID)).Result(ctx); err == nil || ctx.Err() != nil {
		t.Errorf("the waiting task's workflow: %v; want it ended, cancelled", err)
	}
	if calls.Load() != 0 {
		t.Errorf("the tool ran %d times; want never", calls.Load())
	}
}

// A durable A2A task whose model calls a caller-run tool reads
// INPUT_REQUIRED, asking for the call's result; the client's toolResults
// answer goes to the workflow, whose model reads it, and the task
// completes.
func TestA2ACallerToolOnTemporal(t *testing.T) {
	model := robbytest.NewServer()
	t.Cleanup(model.Close)
	model.Reply(robbytest.ToolCalls(robbytest.Call("lookup", `{"word":"robby"}`)), robbytest.Text("A robot."))
	c, store := agentWorker(t, "a2a", robby.WithBaseURL(model.URL), robby.WithModel("m"))
	lookup := openai.FunctionDefinitionParam{Name: "lookup", Description: openai.String("Looks a word up, on the client.")}
	client := durableA2A(t, c, a2aserver.Options{Store: store, CallerTools: []openai.FunctionDefinitionParam{lookup}})
	res, err := client.SendMessage(t.Context(), &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("What is robby?"))})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("read %s; want INPUT_REQUIRED", task.Status.State)
	}
	ask, _ := task.Status.Message.Parts[1].Content.(a2a.Data).Value.(map[string]any)["toolCalls"].([]any)
	if len(ask) != 1 || ask[0].(map[string]any)["name"] != "lookup" {
		t.Fatalf("asked %v; want the call of lookup", task.Status.Message.Parts[1].Content)
	}
	id := ask[0].(map[string]any)["id"]
	res, err = client.SendMessage(t.Context(), &a2a.SendMessageRequest{
		Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewDataPart(map[string]any{
			"toolResults": []any{map[string]any{"id": id, "output": "a Go agent library"}}}))})
	if err != nil {
		t.Fatal(err)
	}
	task = res.(*a2a.Task)
	if task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 ||
		string(task.Artifacts[0].Parts[0].Content.(a2a.Text)) != "A robot." {
		t.Fatalf("read %s, %v; want completed with the answer", task.Status.State, task.Artifacts)
	}
	reqs := model.Requests()
	last := reqs[len(reqs)-1].Messages
	if m := last[len(last)-1]; m.Role != "tool" || m.Content != "a Go agent library" {
		t.Errorf("the model read last %+v; want the client's result", m)
	}
}

// A team's durable A2A tasks in one context: triage hands the first over
// to billing, which answers; the context's conversation keeps each
// message's agent, so the second task's workflow starts with billing.
func TestA2ATeamContextOnTemporal(t *testing.T) {
	model := robbytest.NewServer()
	t.Cleanup(model.Close)
	model.Reply(robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"a refund"}`)),
		robbytest.Text("Refunded order 7."), robbytest.Text("Refunded order 8 too."))
	billing, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"), robby.WithName("billing"),
		robby.WithSystem(billingSystem))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { billing.Close() })
	c, store := agentWorker(t, "a2a", robby.WithBaseURL(model.URL), robby.WithModel("m"), robby.WithName("triage"),
		robby.WithSystem(triageSystem), robby.WithHandoffs(robby.Handoff{To: "billing"}), robby.WithTeam(billing))
	client := durableA2A(t, c, a2aserver.Options{Store: store})
	var contextID string
	for _, q := range []struct{ prompt, answer string }{
		{"A refund for order 7.", "Refunded order 7."},
		{"And order 8.", "Refunded order 8 too."},
	} {
		msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(q.prompt))
		msg.ContextID = contextID
		res, err := client.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: msg})
		if err != nil {
			t.Fatal(err)
		}
		task := res.(*a2a.Task)
		if task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 ||
			string(task.Artifacts[0].Parts[0].Content.(a2a.Text)) != q.answer {
			t.Fatalf("%q: read %s, %v; want completed with %q", q.prompt, task.Status.State, task.Artifacts, q.answer)
		}
		contextID = task.ContextID
	}
	reqs := model.Requests()
	if len(reqs) != 3 || systemOf(reqs[2]) != billingSystem {
		t.Errorf("%d model requests, the last to %q; want 3, the last to billing", len(reqs), systemOf(reqs[len(reqs)-1]))
	}
	_, msgs, err := store.Load(t.Context(), "", contextID)
	var agents []string
	for _, m := range msgs {
		agents = append(agents, m.Agent)
	}
	// The prompts, stored before their runs, name no agent.
	want := []string{"", "triage", "triage", "billing", "billing", "", "billing"}
	if err != nil || !slices.Equal(agents, want) {
		t.Fatalf("the context's conversation: agents %q, %v; want %q", agents, err, want)
	}
}
