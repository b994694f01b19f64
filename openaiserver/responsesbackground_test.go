package openaiserver_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
)

// serveBackground starts the endpoint with a store, closed (its
// background runs stopped) with the test.
func serveBackground(t *testing.T, upstream *robbytest.Server, agentOpts ...robby.Option) string {
	t.Helper()
	h := openaiserver.New(map[string]*robby.Agent{"robby": newTestAgent(t, upstream, agentOpts...)},
		openaiserver.Options{Store: newStore(t)})
	hs := httptest.NewServer(h)
	t.Cleanup(func() { hs.Close(); h.Close() })
	return hs.URL
}

// poll gets the response until its status is no longer in progress.
func poll(t *testing.T, client openai.Client, id string) *responses.Response {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := client.Responses.Get(t.Context(), id, responses.ResponseGetParams{})
		require.NoError(t, err)
		if got.Status != responses.ResponseStatusInProgress && got.Status != responses.ResponseStatusQueued {
			return got
		}
		require.True(t, time.Now().Before(deadline), "still %s after 30 s", got.Status)
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBackgroundResponse: with the official SDK, responses.create with
// background: true returns at once, in progress, while the agent works;
// responses.retrieve reads it completed, with its answer, once it is.
func TestBackgroundResponse(t *testing.T) {
	upstream := newServer(t)
	upstream.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":2,"b":3}`)).WithDelay(300*time.Millisecond),
		robbytest.Text("2 + 3 = 5"))
	client := clientFor(serveBackground(t, upstream, robby.WithTools(addTool)), "")
	params := ask("What is 2 + 3?", "")
	params.Background = openai.Bool(true)
	resp, err := client.Responses.New(t.Context(), params)
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusInProgress, resp.Status)
	assert.True(t, resp.Background)
	assert.Empty(t, resp.OutputText())

	got := poll(t, client, resp.ID)
	assert.Equal(t, responses.ResponseStatusCompleted, got.Status)
	assert.Equal(t, "2 + 3 = 5", got.OutputText())
	assert.True(t, got.Background)
	assert.Len(t, upstream.Requests(), 2)
}

// TestBackgroundResponseCancel: /cancel stops a background response; it
// reads cancelled, and its tool saw its context end.
func TestBackgroundResponseCancel(t *testing.T) {
	upstream := newServer(t)
	upstream.Reply(robbytest.ToolCalls(robbytest.Call("wait", `{}`)))
	wait, started, cancelled := waitingTool("wait")
	client := clientFor(serveBackground(t, upstream, robby.WithTools(wait)), "")
	params := ask("Wait", "")
	params.Background = openai.Bool(true)
	resp, err := client.Responses.New(t.Context(), params)
	require.NoError(t, err)
	<-started
	got, err := client.Responses.Cancel(t.Context(), resp.ID)
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusCancelled, got.Status)
	assert.True(t, cancelled.Load())
	assert.Equal(t, responses.ResponseStatusCancelled, poll(t, client, resp.ID).Status)
}

// TestBackgroundResponseClose: closing the handler stops its background
// responses, which read cancelled.
func TestBackgroundResponseClose(t *testing.T) {
	upstream := newServer(t)
	upstream.Reply(robbytest.ToolCalls(robbytest.Call("wait", `{}`)))
	wait, started, cancelled := waitingTool("wait")
	store := newStore(t)
	h := openaiserver.New(map[string]*robby.Agent{"robby": newTestAgent(t, upstream, robby.WithTools(wait))},
		openaiserver.Options{Store: store})
	hs := httptest.NewServer(h)
	defer hs.Close()
	client := clientFor(hs.URL, "")
	params := ask("Wait", "")
	params.Background = openai.Bool(true)
	resp, err := client.Responses.New(t.Context(), params)
	require.NoError(t, err)
	<-started
	require.NoError(t, h.Close())
	assert.True(t, cancelled.Load())
	assert.Equal(t, responses.ResponseStatusCancelled, poll(t, client, resp.ID).Status)
}

// fakeRunner runs background responses on its own agent, as a durable
// runner's workers would: from the job alone.
type fakeRunner struct {
	agent *robby.Agent
	mu    sync.Mutex
	jobs  map[string]openaiserver.BackgroundJob
}

func (f *fakeRunner) Start(_ context.Context, job openaiserver.BackgroundJob) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobs[job.ID] = job
	return nil
}

func (f *fakeRunner) Wait(ctx context.Context, id string) (*robby.Result, error) {
	f.mu.Lock()
	job := f.jobs[id]
	f.mu.Unlock()
	a := f.agent.Clone()
	a.Reset()
	a.AddMessages(job.Messages...)
	return a.Resume(ctx, robby.WithCallerTools(job.CallerTools...), robby.WithRunSystem(job.Instructions))
}

func (f *fakeRunner) Cancel(context.Context, string) error { return nil }

// TestBackgroundResponseRunner: with a BackgroundRunner, the handler
// hands it the job, then saves what the run added and records it: GET
// reads the answer, and the response can be continued.
func TestBackgroundResponseRunner(t *testing.T) {
	upstream := newServer(t)
	upstream.Reply(robbytest.Text("Hi Ann."), robbytest.Text("You are Ann."))
	runner := &fakeRunner{agent: newTestAgent(t, upstream), jobs: map[string]openaiserver.BackgroundJob{}}
	h := openaiserver.New(map[string]*robby.Agent{"robby": newTestAgent(t, upstream)},
		openaiserver.Options{Store: newStore(t), Background: runner})
	hs := httptest.NewServer(h)
	t.Cleanup(func() { hs.Close(); h.Close() })
	client := clientFor(hs.URL, "")
	params := ask("I am Ann", "")
	params.Background = openai.Bool(true)
	params.Instructions = openai.String("Be brief.")
	resp, err := client.Responses.New(t.Context(), params)
	require.NoError(t, err)
	got := poll(t, client, resp.ID)
	assert.Equal(t, responses.ResponseStatusCompleted, got.Status)
	assert.Equal(t, "Hi Ann.", got.OutputText())
	job := runner.jobs[resp.ID]
	assert.Equal(t, "robby", job.Agent)
	assert.Equal(t, "Be brief.", job.Instructions)

	next, err := client.Responses.New(t.Context(), ask("Who am I?", resp.ID))
	require.NoError(t, err)
	assert.Equal(t, "You are Ann.", next.OutputText(), "the background run's messages were saved")
}
