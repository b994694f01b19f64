package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/internal/pgtest"
	"github.com/robby-go/robby/robbytest"
)

// a2aBearer adds a token to each request of an A2A client.
type a2aBearer string

func (b a2aBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// a2aClient is a2a-go's client of a served agent, made from its card, as
// the token's user.
func a2aClient(t *testing.T, base, token string) (*a2aclient.Client, *a2a.AgentCard) {
	t.Helper()
	card, err := agentcard.NewResolver(http.DefaultClient).Resolve(t.Context(), base)
	require.NoError(t, err)
	c, err := a2aclient.NewFromCard(t.Context(), card, a2aclient.WithJSONRPCTransport(&http.Client{Transport: a2aBearer(token)}))
	require.NoError(t, err)
	t.Cleanup(func() { c.Destroy() })
	return c, card
}

// TestServeA2A: robby serve -a2a serves the card at the address it listens
// on, and a2a-go's client, made from the card, gets a completed task with
// the answer; the token of the other routes is the one asked for.
func TestServeA2A(t *testing.T) {
	srv := upstream(t, robbytest.Text("served over A2A"))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	base, _, done := startServe(ctx, t, "-addr", "127.0.0.1:0", "-base-url", srv.URL, "-model", "agent", "-token", "alice:tok", "-a2a")
	base = strings.TrimSuffix(base, "/v1")
	c, card := a2aClient(t, base, "tok")
	assert.Equal(t, base+"/a2a", card.SupportedInterfaces[0].URL)
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))})
	require.NoError(t, err)
	task, ok := res.(*a2a.Task)
	require.True(t, ok, "%#v", res)
	assert.Equal(t, a2a.TaskStateCompleted, task.Status.State)
	require.Len(t, task.Artifacts, 1)
	assert.Equal(t, a2a.Text("served over A2A"), task.Artifacts[0].Parts[0].Content)

	wrong, _ := a2aClient(t, base, "nope")
	_, err = wrong.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	assert.Error(t, err, "a wrong token is refused")
	cancel()
	require.NoError(t, <-done)
}

// TestServeA2APublicURL: the card names its interfaces under -public-url,
// which needs -a2a; without -a2a there is no card.
func TestServeA2APublicURL(t *testing.T) {
	srv := upstream(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	base, _, done := startServe(ctx, t, "-addr", "127.0.0.1:0", "-base-url", srv.URL, "-a2a", "-public-url", "https://agents.example.com")
	card, err := agentcard.NewResolver(http.DefaultClient).Resolve(t.Context(), strings.TrimSuffix(base, "/v1"))
	require.NoError(t, err)
	assert.Equal(t, "https://agents.example.com/a2a", card.SupportedInterfaces[0].URL)
	cancel()
	require.NoError(t, <-done)

	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	base, _, done = startServe(ctx, t, "-addr", "127.0.0.1:0", "-base-url", srv.URL)
	resp, err := http.Get(strings.TrimSuffix(base, "/v1") + "/.well-known/agent-card.json")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "no card without -a2a")
	cancel()
	require.NoError(t, <-done)

	for _, args := range [][]string{{"-public-url", "https://x.example"}, {"-a2a", "-public-url", "agents.example.com"}} {
		err := run(t.Context(), append([]string{"serve", "-base-url", srv.URL}, args...), nil, nil, &syncBuffer{})
		assert.ErrorContains(t, err, "-public-url", "%v", args)
	}
	for _, args := range [][]string{{"-approve", "echo"}, {"-agents", "team.json", "-approve", "echo"}} {
		err := run(t.Context(), append([]string{"serve", "-base-url", srv.URL}, args...), nil, nil, &syncBuffer{})
		assert.ErrorContains(t, err, "-approve", "%v", args)
	}
}

// TestServeA2ATaskSurvivesSIGKILL: robby serve -a2a -store is SIGKILLed while
// a task's model request is still going; another robby serve on the same
// store reads the task, through a2a-go's client, failed and saying why,
// once three heartbeats passed without a write. On SQLite and PostgreSQL.
func TestServeA2ATaskSurvivesSIGKILL(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		testA2ATaskSurvivesSIGKILL(t, filepath.Join(t.TempDir(), "tasks.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		testA2ATaskSurvivesSIGKILL(t, pgtest.Start(t).NewDatabase(t))
	})
}

func testA2ATaskSurvivesSIGKILL(t *testing.T, store string) {
	asked := make(chan struct{}, 1)
	model := upstream(t, robbytest.Func(func(robbytest.Request) robbytest.Reply {
		asked <- struct{}{}
		return robbytest.Text("too late").WithDelay(time.Minute)
	}))
	args := []string{"-base-url", model.URL, "-model", "m", "-store", store, "-a2a", "-token", "alice:tok", "-heartbeat", "100ms"}
	first, base, _ := serveProcess(t, args...)
	c, _ := a2aClient(t, strings.TrimSuffix(base, "/v1"), "tok")
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi")),
		Config:  &a2a.SendMessageConfig{ReturnImmediately: true}})
	require.NoError(t, err)
	task := res.(*a2a.Task)
	<-asked
	require.NoError(t, first.Process.Kill())
	first.Wait()

	_, base, _ = serveProcess(t, args...)
	c, _ = a2aClient(t, strings.TrimSuffix(base, "/v1"), "tok")
	var got *a2a.Task
	require.Eventually(t, func() bool {
		got, err = c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
		require.NoError(t, err)
		return got.Status.State != a2a.TaskStateWorking && got.Status.State != a2a.TaskStateSubmitted
	}, 10*time.Second, 50*time.Millisecond)
	assert.Equal(t, a2a.TaskStateFailed, got.Status.State)
	require.NotNil(t, got.Status.Message)
	assert.Contains(t, string(got.Status.Message.Parts[0].Content.(a2a.Text)), "stopped before the task ended")
	assert.Equal(t, "hi", string(got.History[0].Parts[0].Content.(a2a.Text)), "the task's history is kept")
}
