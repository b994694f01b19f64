package openaiserver_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/internal/pgtest"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/pgstore"
	"github.com/robby-go/robby/robbytest"
)

// TestResponsesAcrossReplicas: two endpoints, each with its own agent and
// its own pgstore on one PostgreSQL database, as replicas behind a load
// balancer: a response made on one is read and continued on the other,
// and stays its user's. Skipped without PostgreSQL, except under CI=true.
func TestResponsesAcrossReplicas(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	upstream := newServer(t)
	tokens := map[string]string{"alice-token": "alice", "bob-token": "bob"}
	replica := func() string {
		store, err := pgstore.Open(context.Background(), dsn)
		require.NoError(t, err)
		t.Cleanup(func() { store.Close() })
		return serveResponses(t, upstream, openaiserver.Options{Store: store, Tokens: tokens})
	}
	a, b := replica(), replica()

	upstream.Reply(robbytest.Text("Noted: the code is 1234."))
	aliceOnA := clientFor(a, "alice-token")
	r1, err := aliceOnA.Responses.New(t.Context(), ask("The code is 1234.", ""))
	require.NoError(t, err)

	upstream.Reply(robbytest.Text("The code is 1234."))
	aliceOnB := clientFor(b, "alice-token")
	_, text, r2 := streamed(t, aliceOnB, ask("What is the code?", r1.ID))
	assert.Equal(t, "The code is 1234.", text)
	reqs := upstream.Requests()
	assert.Len(t, reqs[1].Messages, 3, "replica b sent the conversation stored by replica a")

	got, err := aliceOnA.Responses.Get(t.Context(), r2.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Equal(t, "The code is 1234.", got.OutputText())

	bobOnB := clientFor(b, "bob-token")
	_, err = bobOnB.Responses.Get(t.Context(), r1.ID, responses.ResponseGetParams{})
	var oe *openai.Error
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, http.StatusNotFound, oe.StatusCode)
}
