package a2aserver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"go.uber.org/goleak"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/a2aserver"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/robbytest/agenttest"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type addArgs struct {
	A int `json:"a" jsonschema:"the first number"`
	B int `json:"b" jsonschema:"the second number"`
}

var addTool = robby.NewTool("add", "Adds two numbers", func(_ context.Context, in addArgs) (int, error) {
	return in.A + in.B, nil
})

// tokens are the users of the fixtures' handlers.
var tokens = map[string]string{"alice-token": "alice", "bob-token": "bob"}

// fixture is a handler serving an agent with the add tool on a scripted
// model, over HTTP.
type fixture struct {
	model *robbytest.Server
	srv   *httptest.Server
	h     *a2aserver.Handler
}

func newFixture(t *testing.T, opts a2aserver.Options, replies ...robbytest.Reply) *fixture {
	t.Helper()
	model := agenttest.NewServer(t, replies...)
	agent := agenttest.New(t, model, robby.WithTools(addTool))
	if opts.Tokens == nil {
		opts.Tokens = tokens
	}
	h := a2aserver.New(agent, opts)
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close() })
	return &fixture{model: model, srv: srv, h: h}
}

// bearer adds a token to each request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// client is a2a-go's client of the fixture, as the token's user, made
// from the card the fixture serves.
func (f *fixture) client(t *testing.T, token string) *a2aclient.Client {
	t.Helper()
	card, err := agentcard.NewResolver(f.srv.Client()).Resolve(t.Context(), f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: bearer{token}}
	c, err := a2aclient.NewFromCard(t.Context(), card, a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Destroy() })
	return c
}

// message is a user's text message, in a context if one is given.
func message(text, contextID string) *a2a.SendMessageRequest {
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	m.ContextID = contextID
	return &a2a.SendMessageRequest{Message: m}
}

// artifactText is the text of a task's one artifact, of one part.
func artifactText(task *a2a.Task) string {
	if len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != 1 {
		return fmt.Sprintf("%d artifacts: want one, of one part", len(task.Artifacts))
	}
	t, _ := task.Artifacts[0].Parts[0].Content.(a2a.Text)
	return string(t)
}

// httptestRecorder is the body of a GET of path from h.
func httptestRecorder(h http.Handler, path string) []byte {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return w.Body.Bytes()
}

// waitFor waits until cond holds, failing the test after a while.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
