package a2aserver_test

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/a2aserver"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/robbytest/agenttest"
)

// replica is another handler of the fixture's agent on the same options,
// as a second process sharing the store would be.
func (f *fixture) replica(t *testing.T, opts a2aserver.Options) *fixture {
	t.Helper()
	opts.Tokens = tokens
	h := a2aserver.New(agenttest.New(t, f.model, robby.WithTools(addTool)), opts)
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close() })
	return &fixture{model: f.model, srv: srv, h: h}
}

func TestTasksOutliveTheHandler(t *testing.T) {
	opts := a2aserver.Options{Store: agenttest.NewStore(t)}
	f := newFixture(t, opts, robbytest.Text("Kept."))
	res, err := f.client(t, "alice-token").SendMessage(t.Context(), message("Keep this.", ""))
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	f.h.Close()

	g := f.replica(t, opts)
	alice := g.client(t, "alice-token")
	got, err := alice.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCompleted || artifactText(got) != "Kept." || len(got.History) == 0 {
		t.Fatalf("GetTask from another handler: %v, %+v", err, got)
	}
	list, err := alice.ListTasks(t.Context(), &a2a.ListTasksRequest{IncludeArtifacts: true})
	if err != nil || list.TotalSize != 1 || artifactText(list.Tasks[0]) != "Kept." {
		t.Fatalf("ListTasks: %v, %+v", err, list)
	}
	bob := g.client(t, "bob-token")
	if _, err := bob.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("Bob reads Alice's stored task: %v", err)
	}
	if list, err := bob.ListTasks(t.Context(), &a2a.ListTasksRequest{}); err != nil || list.TotalSize != 0 {
		t.Errorf("Bob lists %+v, %v", list, err)
	}
}

func TestLostTaskReadsFailed(t *testing.T) {
	store := agenttest.NewStore(t)
	f := newFixture(t, a2aserver.Options{Store: store, Heartbeat: 200 * time.Millisecond})
	// A task left working by a server that died: no heartbeat comes.
	lost := a2a.Task{ID: "lost-1", ContextID: "ctx-1", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}
	data, _ := json.Marshal(&lost)
	if err := store.CreateTask(t.Context(), robby.Task{ID: "lost-1", User: "alice", ContextID: "ctx-1",
		State: string(a2a.TaskStateWorking), Data: data}); err != nil {
		t.Fatal(err)
	}
	c := f.client(t, "alice-token")
	got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "lost-1"})
	if err != nil || got.Status.State != a2a.TaskStateWorking {
		t.Fatalf("a task within its heartbeats: %v, %+v: want it working", err, got)
	}
	time.Sleep(700 * time.Millisecond)
	got, err = c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "lost-1"})
	if err != nil || got.Status.State != a2a.TaskStateFailed ||
		!strings.Contains(string(got.Status.Message.Parts[0].Content.(a2a.Text)), "stopped before the task ended") {
		t.Fatalf("a task three heartbeats silent: %v, %+v: want it failed, saying why", err, got)
	}
	if r, err := store.GetTask(t.Context(), "alice", "lost-1"); err != nil || r.State != string(a2a.TaskStateFailed) {
		t.Errorf("stored %+v, %v: want the failure recorded", r, err)
	}
}

func TestRunningTaskIsNotTakenForLost(t *testing.T) {
	opts := a2aserver.Options{Store: agenttest.NewStore(t), Heartbeat: 200 * time.Millisecond}
	f, c, task := startSlowTaskWith(t, opts)
	time.Sleep(time.Second) // five heartbeats
	other := f.replica(t, opts).client(t, "alice-token")
	for _, cl := range []*struct {
		name string
		get  func() (*a2a.Task, error)
	}{
		{"its server", func() (*a2a.Task, error) { return c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID}) }},
		{"a replica", func() (*a2a.Task, error) { return other.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID}) }},
	} {
		got, err := cl.get()
		if err != nil || got.Status.State != a2a.TaskStateWorking {
			t.Errorf("%s reads %v, %+v: want it working", cl.name, err, got)
		}
	}
	// A replica cancels it: the run stops on its server at its next write.
	if got, err := other.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID}); err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel from a replica: %v, %+v", err, got)
	}
}
