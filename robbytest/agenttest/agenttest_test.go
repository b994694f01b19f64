package agenttest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/robbytest/agenttest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestNewAsksTheScriptedModel: the agent asks srv for Model, and options
// given to New are the agent's.
func TestNewAsksTheScriptedModel(t *testing.T) {
	srv := agenttest.NewServer(t, robbytest.Text("Hello."))
	agent := agenttest.New(t, srv, robby.WithSystem("Be brief."))
	res, err := agent.Run(t.Context(), "Hi")
	require.NoError(t, err)
	assert.Equal(t, "Hello.", res.Text)
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, agenttest.Model, reqs[0].Model)
	assert.Equal(t, "Be brief.", reqs[0].Messages[0].Content)
}

// TestNewDoesNotRetry: a failing model is asked once, so a test of a
// failure sees the first answer.
func TestNewDoesNotRetry(t *testing.T) {
	srv := agenttest.NewServer(t, robbytest.Error(500, `{"error":{"message":"down"}}`), robbytest.Text("late"))
	_, err := agenttest.New(t, srv).Run(t.Context(), "Hi")
	require.Error(t, err)
	assert.Len(t, srv.Requests(), 1)
}

// TestNewOverridesTheDefaults: an option given to New wins over the
// fixture's own.
func TestNewOverridesTheDefaults(t *testing.T) {
	srv := agenttest.NewServer(t, robbytest.Text("ok"))
	_, err := agenttest.New(t, srv, robby.WithModel("other")).Run(t.Context(), "Hi")
	require.NoError(t, err)
	assert.Equal(t, "other", srv.Requests()[0].Model)
}

// TestNewStoreKeepsAConversation: the store is a working one.
func TestNewStoreKeepsAConversation(t *testing.T) {
	store := agenttest.NewStore(t)
	srv := agenttest.NewServer(t, robbytest.Text("Noted."))
	agent := agenttest.New(t, srv)
	_, err := agent.Run(t.Context(), "Remember 7.", robby.WithConversation(store, "ann", "c1"))
	require.NoError(t, err)
	_, msgs, err := store.Load(context.Background(), "ann", "c1")
	require.NoError(t, err)
	assert.Len(t, msgs, 2, "the prompt and the answer")
}
