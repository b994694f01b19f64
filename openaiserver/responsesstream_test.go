package openaiserver_test

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
)

// TestResponsesCreatedAtOnce: a streamed response's first events come
// before the model's first byte, so that its client can cancel it by ID
// while the model is still thinking.
func TestResponsesCreatedAtOnce(t *testing.T) {
	upstream := newServer(t)
	asked, release := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) })
	upstream.Reply(robbytest.Func(func(robbytest.Request) robbytest.Reply {
		close(asked)
		<-release
		return robbytest.Text("Too late.")
	}))
	url := serveResponses(t, upstream, openaiserver.Options{Store: newStore(t)})
	client := clientFor(url, "k")

	s := client.Responses.NewStreaming(t.Context(), ask("Think hard", ""))
	defer s.Close()
	require.True(t, s.Next(), s.Err())
	require.Equal(t, "response.created", s.Current().Type)
	id := s.Current().Response.ID
	assert.Equal(t, "in_progress", string(s.Current().Response.Status))
	require.True(t, s.Next(), s.Err())
	assert.Equal(t, "response.in_progress", s.Current().Type)
	<-asked // the model has the request, and has sent nothing

	got, err := client.Responses.Cancel(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, "cancelled", string(got.Status))
	for s.Next() {
		assert.NotContains(t, []string{"response.completed", "response.output_text.delta"}, s.Current().Type)
	}
	require.NoError(t, s.Err(), "the stream ends")
	got, err = client.Responses.Get(t.Context(), id, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Equal(t, "cancelled", string(got.Status))
}

// TestResponsesStreamFailsAtOnce: a model that fails before any output
// fails the streamed response in the stream, after response.created, as
// OpenAI reports it: an error event, then response.failed.
func TestResponsesStreamFailsAtOnce(t *testing.T) {
	upstream := newServer(t)
	upstream.Reply(robbytest.Error(400, `{"error":{"message":"no such model"}}`))
	url := serveResponses(t, upstream, openaiserver.Options{Store: newStore(t)})
	client := clientFor(url, "k")

	s := client.Responses.NewStreaming(context.Background(), ask("Hello", ""))
	defer s.Close()
	var kinds []string
	var failed responses.Response
	for s.Next() {
		kinds = append(kinds, s.Current().Type)
		if s.Current().Type == "response.failed" {
			failed = s.Current().Response
		}
	}
	require.NoError(t, s.Err())
	assert.Equal(t, []string{"response.created", "response.in_progress", "error", "response.failed"}, kinds)
	assert.Equal(t, "failed", string(failed.Status))
	assert.Contains(t, failed.Error.Message, "no such model")
	got, err := client.Responses.Get(t.Context(), failed.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Equal(t, "failed", string(got.Status))
}
