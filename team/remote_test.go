package team_test

import (
	"context"
	"fmt"
	"iter"
	"os"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/a2atest"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/team"
)

// pricer is a remote agent's executor, served by a2a-go's own server.
type pricer struct{}

func (pricer) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if yield(a2a.NewSubmittedTask(ec, ec.Message), nil) &&
			yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("Price of "+ec.Message.Parts[0].Text()+": 20 EUR")), nil) {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		}
	}
}

func (pricer) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

func TestRemoteAgentInTeam(t *testing.T) {
	t.Setenv("PRICING_TOKEN", "tok-123")
	remote := a2atest.Serve(t, "Pricer", "Prices an order.", "tok-123", pricer{})
	f, err := team.Parse("t.json", fmt.Appendf(nil, `{"root": "desk", "agents": {
		"desk": {"instructions": "You answer.", "agentTools": ["pricing"]},
		"pricing": {"a2a": %q, "headers": {"Authorization": "Bearer ${PRICING_TOKEN}"}}}}`, remote.URL))
	require.NoError(t, err)
	model := robbytest.NewServer()
	defer model.Close()
	tm, err := f.Build(t.Context(), []robby.Option{robby.WithBaseURL(model.URL), robby.WithAPIKey(""), robby.WithModel("m")}, nil)
	require.NoError(t, err)
	defer tm.Close()
	model.Reply(robbytest.ToolCalls(robbytest.Call("pricing", `{"prompt":"order 7"}`)), robbytest.Text("20 EUR."))
	res, err := tm.Root.Run(t.Context(), "How much is order 7?")
	require.NoError(t, err)
	assert.Equal(t, "20 EUR.", res.Text)
	reqs := model.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, []string{"pricing"}, reqs[0].Tools)
	assert.Equal(t, "Price of order 7: 20 EUR", reqs[1].Messages[len(reqs[1].Messages)-1].Content,
		"the remote agent's artifact is the tool's result")

	// A wrong token: the build fails, naming the agent, never the value.
	t.Setenv("PRICING_TOKEN", "wrong-secret")
	_, err = f.Build(t.Context(), []robby.Option{robby.WithBaseURL(model.URL), robby.WithModel("m")}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `team file t.json: agent "pricing": a2a:`)
	assert.NotContains(t, err.Error(), "wrong-secret")
	require.NoError(t, os.Unsetenv("PRICING_TOKEN")) // t.Setenv restores it
	_, err = f.Build(t.Context(), []robby.Option{robby.WithBaseURL(model.URL), robby.WithModel("m")}, nil)
	assert.ErrorContains(t, err, `agent "pricing": headers: Authorization: environment variable PRICING_TOKEN is not set`)
}

func TestRemoteAgentRefusedInFile(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{`{"root": "p", "agents": {"p": {"a2a": "http://x"}}}`, `root: "p" is a remote agent (a2a): the root runs here`},
		{`{"root": "a", "agents": {"a": {"handoffs": ["p"]}, "p": {"a2a": "http://x"}}}`,
			`agent "a": handoffs: "p" is a remote agent (a2a), which runs elsewhere: call it as a tool (agentTools)`},
		{`{"root": "a", "agents": {"a": {}, "p": {"a2a": "http://x", "model": "m"}}}`,
			`agent "p": model: a remote agent (a2a) runs elsewhere: it has none`},
		{`{"root": "a", "agents": {"a": {"headers": {"X": "y"}}}}`, `agent "a": headers: headers are for a remote agent`},
	} {
		_, err := team.Parse("t.json", []byte(tc.file))
		require.Error(t, err, tc.file)
		assert.Contains(t, err.Error(), tc.want)
	}
}
