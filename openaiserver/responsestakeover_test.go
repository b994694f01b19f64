package openaiserver_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync"
	"sync/atomic"
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

// sharedRunner runs each background response once, on its own agent, as
// a durable runner's workers would, and lets any replica wait for it or
// cancel it, as a Temporal server does.
type sharedRunner struct {
	agent *robby.Agent
	mu    sync.Mutex
	runs  map[string]*sharedRun
	waits atomic.Int32
}

type sharedRun struct {
	cancel context.CancelFunc
	done   chan struct{}
	res    *robby.Result
	err    error
}

func newSharedRunner(t *testing.T, agent *robby.Agent) *sharedRunner {
	r := &sharedRunner{agent: agent, runs: map[string]*sharedRun{}}
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, run := range r.runs {
			run.cancel()
			<-run.done
		}
	})
	return r
}

func (r *sharedRunner) Start(_ context.Context, job openaiserver.BackgroundJob) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.runs[job.ID] != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	run := &sharedRun{cancel: cancel, done: make(chan struct{})}
	r.runs[job.ID] = run
	a := r.agent.Clone()
	a.Reset()
	a.AddMessages(job.Messages...)
	go func() {
		defer close(run.done)
		run.res, run.err = a.Resume(ctx, robby.WithCallerTools(job.CallerTools...))
	}()
	return nil
}

func (r *sharedRunner) run(id string) (*sharedRun, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if run := r.runs[id]; run != nil {
		return run, nil
	}
	return nil, errors.New("no such run")
}

func (r *sharedRunner) Wait(ctx context.Context, id string) (*robby.Result, error) {
	run, err := r.run(id)
	if err != nil {
		return nil, err
	}
	r.waits.Add(1)
	select {
	case <-run.done:
		return run.res, run.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (r *sharedRunner) Cancel(_ context.Context, id string) error {
	run, err := r.run(id)
	if err == nil {
		run.cancel()
	}
	return err
}

// replica serves the endpoint on store with runner, as one of several
// replicas; close stops it (and is safe to call twice).
func replica(t *testing.T, upstream *robbytest.Server, store robby.Store, runner openaiserver.BackgroundRunner, beat time.Duration) (client openai.Client, close func()) {
	t.Helper()
	h := openaiserver.New(map[string]*robby.Agent{"robby": newTestAgent(t, upstream)},
		openaiserver.Options{Store: store, Background: runner, Heartbeat: beat})
	hs := httptest.NewServer(h)
	var once sync.Once
	close = func() { once.Do(func() { hs.Close(); h.Close() }) }
	t.Cleanup(close)
	return clientFor(hs.URL, ""), close
}

// startWaiting posts a background response whose run calls the tool
// "wait", and returns its ID once the tool runs.
func startWaiting(t *testing.T, upstream *robbytest.Server, client openai.Client, started <-chan struct{}) string {
	t.Helper()
	upstream.Reply(robbytest.ToolCalls(robbytest.Call("wait", `{}`)), robbytest.Text("Waited."))
	params := ask("Wait", "")
	params.Background = openai.Bool(true)
	resp, err := client.Responses.New(t.Context(), params)
	require.NoError(t, err)
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the tool did not start")
	}
	return resp.ID
}

// countedWait returns a tool "wait" whose calls return once release is
// closed (or their context ends), a channel told of each call, and the
// count of calls.
func countedWait(release <-chan struct{}) (robby.Tool, <-chan struct{}, *atomic.Int32) {
	started := make(chan struct{}, 8)
	calls := new(atomic.Int32)
	tool := robby.NewTool("wait", "Wait", func(ctx context.Context, in struct{}) (string, error) {
		calls.Add(1)
		started <- struct{}{}
		select {
		case <-release:
			return "done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	return tool, started, calls
}

// storedMessages counts the messages of the only conversation in store.
func storedMessages(t *testing.T, store robby.Store) int {
	t.Helper()
	page, _, err := store.List(t.Context(), "", robby.ListOptions{Limit: 2})
	require.NoError(t, err)
	require.Len(t, page, 1)
	_, msgs, err := store.Load(t.Context(), "", page[0].ID)
	require.NoError(t, err)
	return len(msgs)
}

// TestBackgroundTakeover: the replica that accepted a background response
// run by a BackgroundRunner is cut from the store (its writes fail, as a
// dead one's never come); the other replicas read it "in_progress", never
// "failed", while the run goes on, and take it over once its heartbeats
// stopped. The first comes back before the run ends: both it and the one
// that took over save the run, but its messages are stored once, and the
// response reads "completed" with its answer everywhere.
func TestBackgroundTakeover(t *testing.T) {
	const beat = 100 * time.Millisecond
	upstream := newServer(t)
	shared := newStore(t)
	lost := &lostStore{Store: shared}
	release := make(chan struct{})
	wait, started, calls := countedWait(release)
	runner := newSharedRunner(t, newTestAgent(t, upstream, robby.WithTools(wait)))
	accepting, _ := replica(t, upstream, lost, runner, beat)
	b, _ := replica(t, upstream, shared, runner, beat)
	c, _ := replica(t, upstream, shared, runner, beat)
	id := startWaiting(t, upstream, accepting, started)

	lost.lost.Store(true)
	cut := time.Now()
	deadline := cut.Add(30 * beat)
	for runner.waits.Load() < 2 { // the accepting replica's wait, and a replica's that took over
		require.True(t, time.Now().Before(deadline), "not taken over after 30 heartbeats")
		var wg sync.WaitGroup
		for _, cl := range []openai.Client{b, c} {
			wg.Go(func() {
				got, err := cl.Responses.Get(t.Context(), id, responses.ResponseGetParams{})
				assert.NoError(t, err)
				assert.Equal(t, responses.ResponseStatusInProgress, got.Status, "never failed while the run goes on")
			})
		}
		wg.Wait()
		time.Sleep(beat / 4)
	}
	assert.GreaterOrEqual(t, time.Since(cut), 2*beat, "not taken over while its heartbeats come")
	lost.lost.Store(false)
	close(release)
	for _, cl := range []openai.Client{b, c, accepting} {
		got := poll(t, cl, id)
		assert.Equal(t, responses.ResponseStatusCompleted, got.Status)
		assert.Equal(t, "Waited.", got.OutputText())
	}
	assert.Equal(t, 1+3, storedMessages(t, shared), "the input, then the call, its result and the answer, once")
	assert.Equal(t, int32(1), calls.Load())
	assert.Len(t, upstream.Requests(), 2)
}

// TestBackgroundTakeoverAfterClose: a replica closed (a deploy) leaves
// the runs of its background responses going; another replica takes one
// over and records its end.
func TestBackgroundTakeoverAfterClose(t *testing.T) {
	const beat = 100 * time.Millisecond
	upstream := newServer(t)
	shared := newStore(t)
	release := make(chan struct{})
	wait, started, _ := countedWait(release)
	runner := newSharedRunner(t, newTestAgent(t, upstream, robby.WithTools(wait)))
	accepting, closeAccepting := replica(t, upstream, shared, runner, beat)
	other, _ := replica(t, upstream, shared, runner, beat)
	id := startWaiting(t, upstream, accepting, started)
	closeAccepting()
	got, err := other.Responses.Get(t.Context(), id, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusInProgress, got.Status, "the run goes on")
	close(release)
	got = poll(t, other, id)
	assert.Equal(t, responses.ResponseStatusCompleted, got.Status)
	assert.Equal(t, "Waited.", got.OutputText())
}

// TestBackgroundCancelOnAnotherReplica: cancel, asked of a replica other
// than the one that runs a background response, cancels its run on the
// BackgroundRunner; the response reads "cancelled" everywhere.
func TestBackgroundCancelOnAnotherReplica(t *testing.T) {
	upstream := newServer(t)
	shared := newStore(t)
	release := make(chan struct{})
	defer close(release)
	wait, started, _ := countedWait(release)
	runner := newSharedRunner(t, newTestAgent(t, upstream, robby.WithTools(wait)))
	accepting, _ := replica(t, upstream, shared, runner, time.Minute)
	other, _ := replica(t, upstream, shared, runner, time.Minute)
	id := startWaiting(t, upstream, accepting, started)
	got, err := other.Responses.Cancel(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusCancelled, got.Status)
	assert.Equal(t, responses.ResponseStatusCancelled, poll(t, accepting, id).Status)
	run, err := runner.run(id)
	require.NoError(t, err)
	assert.ErrorIs(t, run.err, context.Canceled, "the run was cancelled")
}
