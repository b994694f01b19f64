package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/sqlitestore"
	"github.com/robby-go/robby/temporal/temporaltest"
)

// serveProcess starts robby serve as a process of its own, and returns
// it, its endpoint's base URL and its stderr.
func serveProcess(t *testing.T, args ...string) (*exec.Cmd, string, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "ROBBY_TEST_MAIN=1", "OPENAI_API_KEY=")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var base string
	require.Eventually(t, func() bool {
		m := regexp.MustCompile(`on (http://\S+/v1)`).FindStringSubmatch(stderr.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	}, 30*time.Second, 20*time.Millisecond, "robby serve did not start: %s", stderr)
	return cmd, base, stderr
}

// TestServeTemporalSurvivesReplicaKill: robby serve -temporal accepts a
// background response (openai-go's Responses.New with Background) and is
// SIGKILLed while the worker's model request for it is still going;
// another robby serve on the same store file reads it "in_progress", never
// "failed", takes it over once its heartbeats stopped, and, when the
// worker ends the run, reads it "completed" with its answer
// (Responses.Get). The model request was sent once, and the run's
// messages are stored once.
func TestServeTemporalSurvivesReplicaKill(t *testing.T) {
	addr := temporaltest.StartServer(t)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	var once atomic.Bool
	model := upstream(t, robbytest.Func(func(robbytest.Request) robbytest.Reply {
		if once.CompareAndSwap(false, true) {
			started <- struct{}{}
			<-release // replica A dies meanwhile
		}
		return robbytest.Text("Lyon, by train.")
	}))
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	worker := exec.Command(os.Args[0], "worker", "-temporal", addr, "-task-queue", "bg", "-base-url", model.URL, "-model", "m")
	worker.Env = append(os.Environ(), "ROBBY_TEST_MAIN=1", "OPENAI_API_KEY=sk-worker-only")
	worker.Stderr = os.Stderr
	require.NoError(t, worker.Start())
	t.Cleanup(func() { worker.Process.Kill(); worker.Wait() })

	const beat = 300 * time.Millisecond
	store := filepath.Join(t.TempDir(), "responses.db")
	replicaArgs := []string{"-temporal", addr, "-task-queue", "bg", "-store", store, "-heartbeat", beat.String(),
		"-base-url", "http://127.0.0.1:1", "-model", "robby"}
	a, baseA, _ := serveProcess(t, replicaArgs...)
	_, baseB, stderrB := serveProcess(t, replicaArgs...)
	client := func(base string) openai.Client {
		return openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	}

	accepting := client(baseA)
	resp, err := accepting.Responses.New(t.Context(), responses.ResponseNewParams{Model: "robby",
		Background: openai.Bool(true), Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("How do I get to Lyon?")}})
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusInProgress, resp.Status)
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the worker did not call the model within a minute")
	}
	require.NoError(t, a.Process.Kill()) // SIGKILL, while the worker's model request goes on
	a.Wait()
	killed := time.Now()

	b := client(baseB)
	get := func() *responses.Response {
		t.Helper()
		got, err := b.Responses.Get(t.Context(), resp.ID, responses.ResponseGetParams{})
		require.NoError(t, err)
		return got
	}
	for !strings.Contains(stderrB.String(), "taking over a background response") {
		require.Less(t, time.Since(killed), time.Minute, "not taken over within a minute")
		assert.Equal(t, responses.ResponseStatusInProgress, get().Status, "never failed while the run goes on")
		time.Sleep(beat / 3)
	}
	t.Logf("taken over %v after the kill (heartbeat %v)", time.Since(killed).Round(time.Millisecond), beat)
	assert.Equal(t, responses.ResponseStatusInProgress, get().Status)
	close(release)
	released := time.Now()
	got := get()
	for got.Status == responses.ResponseStatusInProgress {
		require.Less(t, time.Since(released), time.Minute, "not completed within a minute")
		time.Sleep(50 * time.Millisecond)
		got = get()
	}
	t.Logf("completed %v after the model answered", time.Since(released).Round(time.Millisecond))
	assert.Equal(t, responses.ResponseStatusCompleted, got.Status)
	assert.Equal(t, "Lyon, by train.", got.OutputText())
	assert.True(t, got.Background)
	assert.Len(t, model.Requests(), 1, "the model request was sent once")

	s, err := sqlitestore.Open(t.Context(), store)
	require.NoError(t, err)
	defer s.Close()
	page, _, err := s.List(t.Context(), "", robby.ListOptions{Limit: 2})
	require.NoError(t, err)
	require.Len(t, page, 1)
	_, msgs, err := s.Load(t.Context(), "", page[0].ID)
	require.NoError(t, err)
	assert.Len(t, msgs, 2, "the input and the answer, once")
}

// TestServeTemporalTeam: robby serve -temporal -agents runs background
// responses of the team on a robby worker -agents. Triage hands over to
// billing, which answers; the answer's output item names billing. The next
// response (previous_response_id) starts with billing: the stored
// conversation keeps its agents for the durable run too.
func TestServeTemporalTeam(t *testing.T) {
	addr := temporaltest.StartServer(t)
	model := upstream(t, robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"a refund"}`)),
		robbytest.Text("Refunded."), robbytest.Text("Order 8 too."))
	team := teamFile(t)
	worker := exec.Command(os.Args[0], "worker", "-temporal", addr, "-task-queue", "team", "-agents", team,
		"-base-url", model.URL, "-model", "m")
	worker.Env = append(os.Environ(), "ROBBY_TEST_MAIN=1", "OPENAI_API_KEY=sk-worker-only")
	worker.Stderr = os.Stderr
	require.NoError(t, worker.Start())
	t.Cleanup(func() { worker.Process.Kill(); worker.Wait() })
	_, base, _ := serveProcess(t, "-temporal", addr, "-task-queue", "team", "-agents", team,
		"-store", filepath.Join(t.TempDir(), "chats.db"), "-base-url", "http://127.0.0.1:1", "-model", "robby")
	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	respond := func(params responses.ResponseNewParams) *responses.Response {
		t.Helper()
		params.Model, params.Background = "robby", openai.Bool(true)
		resp, err := client.Responses.New(t.Context(), params)
		require.NoError(t, err)
		for start := time.Now(); resp.Status == responses.ResponseStatusInProgress || resp.Status == responses.ResponseStatusQueued; {
			require.Less(t, time.Since(start), time.Minute, "not completed within a minute")
			time.Sleep(50 * time.Millisecond)
			resp, err = client.Responses.Get(t.Context(), resp.ID, responses.ResponseGetParams{})
			require.NoError(t, err)
		}
		require.Equal(t, responses.ResponseStatusCompleted, resp.Status, resp.RawJSON())
		return resp
	}
	first := respond(responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Refund order 7")}})
	assert.Equal(t, "Refunded.", first.OutputText())
	last := first.Output[len(first.Output)-1]
	assert.Contains(t, last.RawJSON(), `"agent":"billing"`)
	next := respond(responses.ResponseNewParams{PreviousResponseID: openai.String(first.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("And order 8?")}})
	assert.Equal(t, "Order 8 too.", next.OutputText())
	reqs := model.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, "You route.", reqs[0].Messages[0].Content)
	assert.Equal(t, "You bill.", reqs[1].Messages[0].Content)
	assert.Equal(t, "You bill.", reqs[2].Messages[0].Content, "the next response goes straight to billing")
}
