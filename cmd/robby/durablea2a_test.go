package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/robby-go/robby/internal/pgtest"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/temporal"
	"github.com/robby-go/robby/temporal/temporaltest"
)

// durableA2A is a Temporal dev server, a robby worker on it whose model
// holds its first request until release is closed, and the arguments of a
// robby serve -a2a -temporal replica on store.
type durableA2A struct {
	addr    string
	model   *robbytest.Server
	started chan struct{}
	release chan struct{}
	args    []string
}

const durableA2ABeat = 300 * time.Millisecond

func startDurableA2A(t *testing.T, store string) *durableA2A {
	t.Helper()
	d := &durableA2A{addr: temporaltest.StartServer(t), started: make(chan struct{}, 1), release: make(chan struct{})}
	var once atomic.Bool
	d.model = upstream(t, robbytest.Func(func(robbytest.Request) robbytest.Reply {
		if once.CompareAndSwap(false, true) {
			d.started <- struct{}{}
			<-d.release
		}
		return robbytest.Text("Lyon, by train.")
	}), robbytest.Text("The same way."))
	t.Cleanup(d.free)
	worker := exec.Command(os.Args[0], "worker", "-temporal", d.addr, "-task-queue", "a2a", "-base-url", d.model.URL, "-model", "m")
	worker.Env = append(os.Environ(), "ROBBY_TEST_MAIN=1", "OPENAI_API_KEY=sk-worker-only")
	worker.Stderr = os.Stderr
	require.NoError(t, worker.Start())
	t.Cleanup(func() { worker.Process.Kill(); worker.Wait() })
	d.args = []string{"-temporal", d.addr, "-task-queue", "a2a", "-store", store, "-heartbeat", durableA2ABeat.String(),
		"-a2a", "-token", "alice:tok", "-base-url", "http://127.0.0.1:1", "-model", "robby"}
	return d
}

// free lets the model answer.
func (d *durableA2A) free() {
	select {
	case <-d.release:
	default:
		close(d.release)
	}
}

// send sends a message to the replica at base, answered at once, and waits
// until the worker asks the model.
func (d *durableA2A) send(t *testing.T, base string) *a2a.Task {
	t.Helper()
	c, _ := a2aClient(t, strings.TrimSuffix(base, "/v1"), "tok")
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("How do I get to Lyon?")),
		Config:  &a2a.SendMessageConfig{ReturnImmediately: true}})
	require.NoError(t, err)
	task, ok := res.(*a2a.Task)
	require.True(t, ok, "%#v", res)
	select {
	case <-d.started:
	case <-time.After(time.Minute):
		got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
		t.Fatalf("the worker did not call the model within a minute: the task %+v, %v", got, err)
	}
	return task
}

// TestServeA2ATemporalSurvivesReplicaKill: robby serve -a2a -temporal
// accepts a task (a2a-go's client) and is SIGKILLed while the worker's
// model request for it is still going; another replica on the same store
// reads the task WORKING, never FAILED, takes it over once its heartbeats
// stopped, and, when the worker ends the run, reads it COMPLETED with the
// answer. The model request was sent once, and the context's conversation
// holds the message and the answer once. On SQLite and PostgreSQL.
func TestServeA2ATemporalSurvivesReplicaKill(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		testA2ATemporalSurvivesReplicaKill(t, filepath.Join(t.TempDir(), "tasks.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		testA2ATemporalSurvivesReplicaKill(t, pgtest.Start(t).NewDatabase(t))
	})
}

func testA2ATemporalSurvivesReplicaKill(t *testing.T, store string) {
	d := startDurableA2A(t, store)
	a, baseA, _ := serveProcess(t, d.args...)
	_, baseB, stderrB := serveProcess(t, d.args...)
	task := d.send(t, baseA)
	require.NoError(t, a.Process.Kill()) // SIGKILL, while the worker's model request goes on
	a.Wait()
	killed := time.Now()

	b, _ := a2aClient(t, strings.TrimSuffix(baseB, "/v1"), "tok")
	get := func() *a2a.Task {
		t.Helper()
		got, err := b.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
		require.NoError(t, err)
		return got
	}
	for !strings.Contains(stderrB.String(), "taking over a durable A2A task") {
		require.Less(t, time.Since(killed), time.Minute, "not taken over within a minute")
		assert.Equal(t, a2a.TaskStateWorking, get().Status.State, "never failed while the run goes on")
		time.Sleep(durableA2ABeat / 3)
	}
	t.Logf("taken over %v after the kill (heartbeat %v)", time.Since(killed).Round(time.Millisecond), durableA2ABeat)
	assert.Equal(t, a2a.TaskStateWorking, get().Status.State)
	d.free()
	released := time.Now()
	got := get()
	for !got.Status.State.Terminal() {
		require.Less(t, time.Since(released), time.Minute, "not completed within a minute")
		time.Sleep(50 * time.Millisecond)
		got = get()
	}
	t.Logf("completed %v after the model answered", time.Since(released).Round(time.Millisecond))
	require.Equal(t, a2a.TaskStateCompleted, got.Status.State, "%+v", got.Status)
	require.Len(t, got.Artifacts, 1)
	assert.Equal(t, a2a.Text("Lyon, by train."), got.Artifacts[0].Parts[0].Content)
	assert.Len(t, d.model.Requests(), 1, "the model request was sent once")

	// The next message in the context reads the first exchange, once.
	res, err := b.SendMessage(t.Context(), &a2a.SendMessageRequest{
		Message: &a2a.Message{ID: a2a.NewMessageID(), Role: a2a.MessageRoleUser, ContextID: got.ContextID,
			Parts: a2a.ContentParts{a2a.NewTextPart("And back?")}}})
	require.NoError(t, err)
	next, ok := res.(*a2a.Task)
	require.True(t, ok, "%#v", res)
	assert.Equal(t, a2a.TaskStateCompleted, next.Status.State, "%+v", next.Status)
	reqs := d.model.Requests()
	require.Len(t, reqs, 2)
	var roles []string
	for _, m := range reqs[1].Messages {
		roles = append(roles, m.Role+":"+m.Content)
	}
	assert.Equal(t, []string{"user:How do I get to Lyon?", "assistant:Lyon, by train.", "user:And back?"}, roles)
}

// TestServeA2ATemporalCancel: a durable task accepted by one replica of
// robby serve -a2a -temporal and cancelled through another reads
// CANCELED on both, and its workflow is cancelled.
func TestServeA2ATemporalCancel(t *testing.T) {
	d := startDurableA2A(t, filepath.Join(t.TempDir(), "tasks.db"))
	_, baseA, _ := serveProcess(t, d.args...)
	_, baseB, _ := serveProcess(t, d.args...)
	task := d.send(t, baseA)

	b, _ := a2aClient(t, strings.TrimSuffix(baseB, "/v1"), "tok")
	canceled, err := b.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID})
	require.NoError(t, err)
	assert.Equal(t, a2a.TaskStateCanceled, canceled.Status.State)

	tc, err := (&durableFlags{addr: d.addr}).dial(io.Discard)
	require.NoError(t, err)
	defer tc.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err = temporal.Attach(tc, "a2a-"+string(task.ID)).Result(ctx)
	assert.True(t, sdktemporal.IsCanceledError(err), "the task's workflow ended with %v; want it cancelled", err)
	a, _ := a2aClient(t, strings.TrimSuffix(baseA, "/v1"), "tok")
	for _, c := range []*a2aclient.Client{a, b} {
		got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
		require.NoError(t, err)
		assert.Equal(t, a2a.TaskStateCanceled, got.Status.State)
	}
}
