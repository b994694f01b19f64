package robby

import (
	"fmt"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/robby-go/robby/robbytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEnvironmentConfiguresTheEndpoint(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.Text("from env"))
	t.Setenv("OPENAI_BASE_URL", srv.URL)
	t.Setenv("OPENAI_API_KEY", "sk-env")
	a, err := New(WithModel("m"))
	require.NoError(t, err)
	res, err := a.Run(t.Context(), "hi")
	require.NoError(t, err)
	assert.Equal(t, "from env", res.Text)
	assert.Equal(t, "Bearer sk-env", srv.Requests()[0].Header.Get("Authorization"))
}

func TestWithClientAndRequestOptions(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.Text("ok"))
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-client"), option.WithHeader("X-Client", "mine"))
	a, err := New(WithClient(client), WithModel("m"), WithRequestOptions(option.WithHeader("X-Request", "yes")))
	require.NoError(t, err)
	_, err = a.Run(t.Context(), "hi")
	require.NoError(t, err)
	h := srv.Requests()[0].Header
	assert.Equal(t, "Bearer sk-client", h.Get("Authorization"))
	assert.Equal(t, "mine", h.Get("X-Client"))
	assert.Equal(t, "yes", h.Get("X-Request"))
}

// TestAgentsReuseConnections: agents built one after another share the
// default transport, so conversations after the first open no connection.
func TestAgentsReuseConnections(t *testing.T) {
	srv := newServer(t)
	for i := range 5 {
		srv.Reply(robbytest.Text(fmt.Sprint("answer ", i)))
		a, err := New(WithBaseURL(srv.URL), WithAPIKey(""), WithModel("m"))
		require.NoError(t, err)
		_, err = a.Run(t.Context(), "hi")
		require.NoError(t, err)
		require.NoError(t, a.Close())
	}
	conns := map[string]bool{}
	for _, r := range srv.Requests() {
		conns[r.RemoteAddr] = true
	}
	assert.Len(t, conns, 1, "connections opened by 5 agents in a row")
}

// TestDefaultClientFollowsEnvironment: agents share one default openai-go
// client, which reads OPENAI_BASE_URL when built; an agent built after the
// variable changed uses the new value.
func TestDefaultClientFollowsEnvironment(t *testing.T) {
	for i := range 2 {
		srv := newServer(t)
		srv.Reply(robbytest.Text(fmt.Sprint("answer ", i)))
		t.Setenv("OPENAI_BASE_URL", srv.URL)
		a, err := New(WithAPIKey(""), WithModel("m"))
		require.NoError(t, err)
		res, err := a.Run(t.Context(), "hi")
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprint("answer ", i), res.Text)
		assert.Len(t, srv.Requests(), 1)
		require.NoError(t, a.Close())
	}
}
