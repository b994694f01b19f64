package temporal_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/sqlitestore"
	"github.com/robby-go/robby/temporal"
	"github.com/robby-go/robby/temporal/temporaltest"
)

// A background response run as a workflow, with the official SDK:
// responses.create with background: true returns at once, in progress;
// responses.retrieve reads the answer once the workflow's worker gave it.
func TestBackgroundResponseOnTemporal(t *testing.T) {
	c, calls, store := calcWorker(t, "responses")
	client := endpoint(t, store, &temporal.ResponsesRunner{Client: c, TaskQueue: "responses"})
	resp, err := client.Responses.New(t.Context(), responses.ResponseNewParams{Model: "calc", Background: openai.Bool(true),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What is 2 + 3?")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != responses.ResponseStatusInProgress || !resp.Background {
		t.Errorf("created %s, background %v; want in_progress, true", resp.Status, resp.Background)
	}
	deadline := time.Now().Add(time.Minute)
	for resp.Status == responses.ResponseStatusInProgress && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if resp, err = client.Responses.Get(t.Context(), resp.ID, responses.ResponseGetParams{}); err != nil {
			t.Fatal(err)
		}
	}
	if resp.Status != responses.ResponseStatusCompleted || resp.OutputText() != "2 + 3 = 5" || calls.Load() != 1 {
		t.Errorf("retrieved %s %q after %d tool calls; want completed, the answer, 1", resp.Status, resp.OutputText(), calls.Load())
	}
	if _, err := temporal.Attach(c, resp.ID).Result(t.Context()); err != nil {
		t.Errorf("the response's workflow: %v", err)
	}
}

// calcWorker starts a Temporal dev server and a worker of queue that serves
// the agent "calc", with the tool add, whose model adds 2 and 3. It returns
// a client of the server, the count of add's calls, and a store that is
// closed after the test's handlers.
func calcWorker(t *testing.T, queue string) (client.Client, *atomic.Int32, *sqlitestore.Store) {
	t.Helper()
	model := robbytest.NewServer()
	t.Cleanup(model.Close)
	model.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":2,"b":3}`)), robbytest.Text("2 + 3 = 5"))
	add, calls := newAdd()
	c, store := agentWorker(t, queue, robby.WithBaseURL(model.URL), robby.WithModel("m"), robby.WithTools(add))
	return c, calls, store
}

// agentWorker starts a dev server and a worker of the agent "calc" built
// with opts, on queue, and opens a store. It returns the server's client
// and the store.
func agentWorker(t *testing.T, queue string, opts ...robby.Option) (client.Client, *sqlitestore.Store) {
	t.Helper()
	c := dial(t, temporaltest.StartServer(t))
	agent, err := robby.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Close() })
	w := worker.New(c, queue, worker.Options{})
	temporal.Register(w, temporal.Agents{"calc": agent}, temporal.Options{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	store, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "robby.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() }) // after the handlers, closed first
	return c, store
}

// endpoint serves background responses of the model "calc" on runner,
// kept in store, until the test ends; its own agent runs nothing.
func endpoint(t *testing.T, store robby.Store, runner openaiserver.BackgroundRunner) openai.Client {
	t.Helper()
	agent, err := robby.New(robby.WithBaseURL("http://127.0.0.1:1"), robby.WithModel("unused"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Close() })
	h := openaiserver.New(map[string]*robby.Agent{"calc": agent}, openaiserver.Options{Store: store, Background: runner})
	hs := httptest.NewServer(h)
	t.Cleanup(func() { hs.Close(); h.Close() })
	return openai.NewClient(option.WithBaseURL(hs.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
}

// A background response's workflow is cancelled by a cancel asked of a
// replica other than the one that started it: both read it cancelled.
func TestBackgroundResponseCancelOnAnotherReplica(t *testing.T) {
	c := dial(t, temporaltest.StartServer(t))
	model := robbytest.NewServer()
	defer model.Close()
	model.Reply(robbytest.ToolCalls(robbytest.Call("hang", `{}`)))
	started := make(chan struct{}, 1)
	hang := robby.NewTool("hang", "Hang", func(ctx context.Context, _ struct{}) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	})
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"), robby.WithTools(hang))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	w := worker.New(c, "cancel", worker.Options{})
	temporal.Register(w, temporal.Agents{"calc": agent}, temporal.Options{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	store, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "responses.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() }) // after the endpoints, closed first
	runner := &temporal.ResponsesRunner{Client: c, TaskQueue: "cancel"}
	accepting, other := endpoint(t, store, runner), endpoint(t, store, runner)

	resp, err := accepting.Responses.New(t.Context(), responses.ResponseNewParams{Model: "calc", Background: openai.Bool(true),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hang")}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the tool was not called within a minute")
	}
	got, err := other.Responses.Cancel(t.Context(), resp.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != responses.ResponseStatusCancelled {
		t.Errorf("cancelled on another replica: %s", got.Status)
	}
	deadline := time.Now().Add(time.Minute)
	for got.Status == responses.ResponseStatusInProgress && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if got, err = accepting.Responses.Get(t.Context(), resp.ID, responses.ResponseGetParams{}); err != nil {
			t.Fatal(err)
		}
	}
	if got.Status != responses.ResponseStatusCancelled {
		t.Errorf("read on the accepting replica: %s", got.Status)
	}
	if _, err := temporal.Attach(c, resp.ID).Result(t.Context()); !errors.Is(err, context.Canceled) && !sdktemporal.IsCanceledError(err) {
		t.Errorf("the workflow ended with %v; want cancelled", err)
	}
}
