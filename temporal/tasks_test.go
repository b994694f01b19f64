package temporal_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/a2aserver"
	"github.com/robby-go/robby/temporal"
)

// An A2A task run as a workflow, streamed with a2a-go's client: the tool
// call and its result, then the answer, come from the workflow's
// progress; the task ends completed, its workflow's result the answer, and
// the context's conversation holds the exchange.
func TestA2ATaskOnTemporal(t *testing.T) {
	c, calls, store := calcWorker(t, "a2a")
	agent, err := robby.New(robby.WithBaseURL("http://127.0.0.1:1"), robby.WithModel("unused"))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	h := a2aserver.New(agent, a2aserver.Options{Store: store,
		Durable: &temporal.TaskRunner{Client: c, TaskQueue: "a2a", Agent: "calc"}})
	hs := httptest.NewServer(h)
	t.Cleanup(func() { hs.Close(); h.Close() })
	card, err := agentcard.NewResolver(hs.Client()).Resolve(t.Context(), hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	client, err := a2aclient.NewFromCard(t.Context(), card)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Destroy()

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
