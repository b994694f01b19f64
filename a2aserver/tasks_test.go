package a2aserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/a2aserver"
	"github.com/robby-go/robby/internal/pgtest"
	"github.com/robby-go/robby/pgstore"
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
	// A replica cancels it (TestCancelFromAReplicaStopsTheRun: the run stops).
	if got, err := other.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID}); err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel from a replica: %v, %+v", err, got)
	}
}

// TestCancelFromAReplicaStopsTheRun: a task runs on handler A, blocked in a
// tool; handler B, on the same store, cancels it. A's run stops within
// CancelPoll and a read, and A's stream ends canceled. On SQLite, and on
// PostgreSQL with a pgstore for each handler, as replicas have.
func TestCancelFromAReplicaStopsTheRun(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		store := agenttest.NewStore(t)
		testCancelFromAReplica(t, store, store)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.Start(t).NewDatabase(t)
		open := func() robby.Store {
			store, err := pgstore.Open(t.Context(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { store.Close() })
			return store
		}
		testCancelFromAReplica(t, open(), open())
	})
}

func testCancelFromAReplica(t *testing.T, storeA, storeB robby.Store) {
	stopped := make(chan time.Time, 1)
	wait := robby.NewTool("wait", "Waits until cancelled", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		stopped <- time.Now()
		return "", ctx.Err()
	})
	model := agenttest.NewServer(t, robbytest.ToolCalls(robbytest.Call("wait", `{}`)))
	a := &fixture{model: model, h: a2aserver.New(agenttest.New(t, model, robby.WithTools(wait), robby.WithToolTimeout(time.Minute)),
		a2aserver.Options{Store: storeA, Tokens: tokens})}
	a.srv = httptest.NewServer(a.h)
	t.Cleanup(func() { a.srv.Close(); a.h.Close() })
	b := a.replica(t, a2aserver.Options{Store: storeB})

	events := make(chan a2a.Event, 16)
	go func() {
		defer close(events)
		for e, err := range a.client(t, "alice-token").SendStreamingMessage(t.Context(), message("Wait.", "")) {
			if err != nil {
				return
			}
			events <- e
		}
	}()
	var task a2a.TaskID
	for e := range events {
		if s, ok := e.(*a2a.TaskStatusUpdateEvent); ok && s.Status.Message != nil {
			task = s.TaskID // the wait call: the tool runs
			break
		}
	}
	time.Sleep(100 * time.Millisecond)
	canceled := time.Now()
	if got, err := b.client(t, "alice-token").CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task}); err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel on B: %v, %+v", err, got)
	}
	select {
	case at := <-stopped:
		took := at.Sub(canceled)
		t.Logf("the run on A stopped %v after the cancel on B (CancelPoll %v)", took, a2aserver.CancelPoll)
		if took > a2aserver.CancelPoll+time.Second {
			t.Errorf("the run stopped %v after the cancel: want within CancelPoll (%v) and a read", took, a2aserver.CancelPoll)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run on A did not stop")
	}
	var last a2a.Event
	for e := range events {
		last = e
	}
	var state a2a.TaskState
	switch e := last.(type) {
	case *a2a.TaskStatusUpdateEvent:
		state = e.Status.State
	case *a2a.Task: // a2asrv's override: the task as stored, canceled by B
		state = e.Status.State
	}
	if state != a2a.TaskStateCanceled {
		t.Errorf("A's stream ended on %#v: want the task CANCELED", last)
	}
	got, err := a.client(t, "alice-token").GetTask(t.Context(), &a2a.GetTaskRequest{ID: task})
	if err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Errorf("the task read on A: %v, %+v", err, got)
	}
}

func TestListTasksPages(t *testing.T) {
	f := newFixture(t, a2aserver.Options{Store: agenttest.NewStore(t)}, robbytest.Text("One."), robbytest.Text("Two."))
	c := f.client(t, "alice-token")
	for _, text := range []string{"1", "2"} {
		if _, err := c.SendMessage(t.Context(), message(text, "")); err != nil {
			t.Fatal(err)
		}
	}
	first, err := c.ListTasks(t.Context(), &a2a.ListTasksRequest{PageSize: 1})
	if err != nil || len(first.Tasks) != 1 || first.PageSize != 1 || first.TotalSize != 2 || first.NextPageToken == "" {
		t.Fatalf("page of 1: %v, %+v", err, first)
	}
	all, err := c.ListTasks(t.Context(), &a2a.ListTasksRequest{PageSize: 10})
	if err != nil || len(all.Tasks) != 2 || all.PageSize != 2 || all.NextPageToken != "" {
		t.Fatalf("page of 10: %v, %+v: want both, pageSize the count returned", err, all)
	}
	minus := -1
	for _, req := range []*a2a.ListTasksRequest{{PageSize: -1}, {PageSize: 101}, {HistoryLength: &minus}, {Status: "TASK_STATE_DREAMING"}} {
		if _, err := c.ListTasks(t.Context(), req); !errors.Is(err, a2a.ErrInvalidParams) {
			t.Errorf("%+v: %v, want invalid params (-32602)", req, err)
		}
	}
	if done, err := c.ListTasks(t.Context(), &a2a.ListTasksRequest{Status: a2a.TaskStateCompleted}); err != nil || len(done.Tasks) != 2 {
		t.Errorf("listed by a state: %v, %+v", err, done)
	}
}
