package openaiserver_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
)

// TestResponsesGetAsCreated: GET gives back what the response was created
// with (instructions, previous_response_id, parameters, metadata) and how
// it ended (usage), as POST returned it.
func TestResponsesGetAsCreated(t *testing.T) {
	upstream := newServer(t)
	url := serveResponses(t, upstream, openaiserver.Options{Store: newStore(t)})
	client := clientFor(url, "k")
	upstream.Reply(robbytest.Text("Hi.").WithUsage(7, 3), robbytest.Text("Bye.").WithUsage(20, 5))
	first, err := client.Responses.New(t.Context(), ask("Hello", ""))
	require.NoError(t, err)
	p := ask("Goodbye", first.ID)
	p.Instructions = openai.String("Be brief.")
	p.Temperature = openai.Float(0.25)
	p.MaxOutputTokens = openai.Int(100)
	p.Metadata = shared.Metadata{"session": "s1"}
	created, err := client.Responses.New(t.Context(), p)
	require.NoError(t, err)

	got, err := client.Responses.Get(t.Context(), created.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Equal(t, "completed", string(got.Status))
	assert.Equal(t, "Bye.", got.OutputText())
	assert.Equal(t, first.ID, got.PreviousResponseID)
	assert.Equal(t, "Be brief.", got.Instructions.OfString)
	assert.Equal(t, 0.25, got.Temperature)
	assert.EqualValues(t, 100, got.MaxOutputTokens)
	assert.Equal(t, "s1", got.Metadata["session"])
	assert.EqualValues(t, 20, got.Usage.InputTokens)
	assert.EqualValues(t, 5, got.Usage.OutputTokens)
	assert.EqualValues(t, 25, got.Usage.TotalTokens)
	assert.Equal(t, created.CreatedAt, got.CreatedAt)
	assert.Equal(t, created.ID, got.ID)

	got, err = client.Responses.Get(t.Context(), first.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.EqualValues(t, 10, got.Usage.TotalTokens, "each response its own usage")
	assert.Empty(t, got.PreviousResponseID)
	assert.Empty(t, got.Instructions.OfString)
}

// waitTool returns a tool "wait" whose calls return once release is
// closed, or their context ends.
func waitTool(release <-chan struct{}) robby.Tool {
	return robby.NewTool("wait", "Wait", func(ctx context.Context, in struct{}) (string, error) {
		select {
		case <-release:
			return "done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
}

// TestResponsesGetWhileRunning: a response whose run goes on (its agent's
// tool still running) reads "in_progress", then "completed".
func TestResponsesGetWhileRunning(t *testing.T) {
	upstream := newServer(t)
	release := make(chan struct{})
	wait := waitTool(release)
	url := serveResponses(t, upstream, openaiserver.Options{Store: newStore(t)}, robby.WithTools(wait))
	client := clientFor(url, "k")
	upstream.Reply(robbytest.ToolCalls(robbytest.Call("wait", `{}`)).WithText("Waiting."), robbytest.Text("Waited.").WithUsage(4, 2))

	s := client.Responses.NewStreaming(t.Context(), ask("Wait for it", ""))
	defer s.Close()
	require.True(t, s.Next(), s.Err())
	require.Equal(t, "response.created", s.Current().Type)
	id := s.Current().Response.ID
	got, err := client.Responses.Get(t.Context(), id, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Equal(t, "in_progress", string(got.Status), "while its tool runs")
	assert.Zero(t, got.Usage.TotalTokens, "no usage before the run ends")

	close(release)
	var done responses.Response
	for s.Next() {
		done = s.Current().Response
	}
	require.NoError(t, s.Err())
	got, err = client.Responses.Get(t.Context(), id, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Equal(t, "completed", string(got.Status))
	assert.Equal(t, "Waiting.Waited.", got.OutputText())
	assert.Positive(t, done.Usage.TotalTokens)
	assert.Equal(t, done.Usage.TotalTokens, got.Usage.TotalTokens)
}

// TestResponsesGetFailed: a response whose model failed mid-stream reads
// "failed", with the error its client was told.
func TestResponsesGetFailed(t *testing.T) {
	upstream := newServer(t)
	url := serveResponses(t, upstream, openaiserver.Options{Store: newStore(t)}, robby.WithTools(addTool))
	client := clientFor(url, "k")
	upstream.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)).WithText("Adding."),
		robbytest.Error(400, `{"error":{"message":"bad things"}}`))
	kinds, _, last := streamed(t, client, ask("Add", ""))
	require.Equal(t, "response.failed", kinds[len(kinds)-1])

	got, err := client.Responses.Get(t.Context(), last.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Equal(t, "failed", string(got.Status))
	assert.Equal(t, last.Error.Message, got.Error.Message)
	assert.Contains(t, got.Error.Message, "bad things")
}

// TestResponsesInputItems lists what came before a response, as openai-go
// pages it: the earlier questions and answers and the response's own
// input, with its image, but not the agent's system prompt nor its own
// tool calls.
func TestResponsesInputItems(t *testing.T) {
	upstream := newServer(t)
	url := serveResponses(t, upstream, openaiserver.Options{Store: newStore(t)},
		robby.WithSystem("The secret prompt."), robby.WithTools(addTool))
	client := clientFor(url, "k")
	upstream.Reply(robbytest.Text("Hello Bob."),
		robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)), robbytest.Text("3."),
		robbytest.Text("You're welcome."))
	r1, err := client.Responses.New(t.Context(), ask("My name is Bob.", ""))
	require.NoError(t, err)
	p := ask("", r1.ID)
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
			responses.ResponseInputContentParamOfInputText("What is 1+2 in this picture?"),
			{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String("https://example.com/sum.png"),
				Detail: responses.ResponseInputImageDetailHigh}},
		}, responses.EasyInputMessageRoleUser)}}
	r2, err := client.Responses.New(t.Context(), p)
	require.NoError(t, err)
	r3, err := client.Responses.New(t.Context(), ask("Thanks", r2.ID))
	require.NoError(t, err)

	type item struct{ typ, role, text string }
	list := func(id string, order responses.InputItemListParamsOrder) []item {
		t.Helper()
		var got []item
		var ids []string
		pager := client.Responses.InputItems.ListAutoPaging(t.Context(), id,
			responses.InputItemListParams{Limit: openai.Int(2), Order: order})
		for pager.Next() {
			it := pager.Current()
			ids = append(ids, it.ID)
			var text string
			for _, c := range it.AsMessage().Content {
				text += c.Text
				if c.Type == "input_image" {
					text += "[" + c.ImageURL + " " + string(c.Detail) + "]"
				}
			}
			got = append(got, item{it.Type, it.Role, text})
		}
		require.NoError(t, pager.Err())
		assert.Len(t, ids, len(got))
		return got
	}
	want := []item{
		{"message", "user", "My name is Bob."},
		{"message", "assistant", "Hello Bob."},
		{"message", "user", "What is 1+2 in this picture?[https://example.com/sum.png high]"},
		{"message", "assistant", "3."},
		{"message", "user", "Thanks"},
	}
	assert.Equal(t, want, list(r3.ID, responses.InputItemListParamsOrderAsc), "three pages of two, oldest first")
	desc := list(r3.ID, "")
	require.Len(t, desc, len(want), "newest first by default")
	assert.Equal(t, want[4], desc[0])
	assert.Equal(t, want[:1], list(r1.ID, ""), "the first response's input only")

	page, err := client.Responses.InputItems.List(t.Context(), r3.ID, responses.InputItemListParams{})
	require.NoError(t, err)
	assert.Len(t, page.Data, 5)
	assert.False(t, page.HasMore)

	_, err = client.Responses.InputItems.List(t.Context(), "resp_nope_1", responses.InputItemListParams{})
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 404, apiErr.StatusCode)
	_, err = client.Responses.InputItems.List(t.Context(), r3.ID, responses.InputItemListParams{After: openai.String("msg_nope")})
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 400, apiErr.StatusCode)
}

// TestResponsesCancel: a streamed response whose run goes on is cancelled
// by its ID: the run stops, the stream ends, and the response reads
// "cancelled"; one that has ended cannot be, and another user's is a 404.
func TestResponsesCancel(t *testing.T) {
	upstream := newServer(t)
	started, stopped := make(chan struct{}), make(chan error, 1)
	wait := robby.NewTool("wait", "Wait", func(ctx context.Context, in struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return "", ctx.Err()
	})
	url := serveResponses(t, upstream, openaiserver.Options{Store: newStore(t),
		Tokens: map[string]string{"alice-token": "alice", "bob-token": "bob"}}, robby.WithTools(wait))
	alice, bob := clientFor(url, "alice-token"), clientFor(url, "bob-token")
	upstream.Reply(robbytest.ToolCalls(robbytest.Call("wait", `{}`)).WithText("Waiting."))

	s := alice.Responses.NewStreaming(t.Context(), ask("Wait for ever", ""))
	defer s.Close()
	require.True(t, s.Next(), s.Err())
	id := s.Current().Response.ID
	<-started // response.created comes at once; cancel the run once its tool runs

	_, err := bob.Responses.Cancel(t.Context(), id)
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 404, apiErr.StatusCode, "another user's response")

	got, err := alice.Responses.Cancel(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, "cancelled", string(got.Status))
	assert.Equal(t, id, got.ID)
	assert.ErrorIs(t, <-stopped, context.Canceled, "the tool was stopped")
	for s.Next() {
		assert.NotEqual(t, "response.completed", s.Current().Type)
	}
	require.NoError(t, s.Err(), "the stream ends")

	got, err = alice.Responses.Get(t.Context(), id, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Equal(t, "cancelled", string(got.Status))
	_, err = alice.Responses.Cancel(t.Context(), id)
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 400, apiErr.StatusCode, "a response that ended")
	assert.Len(t, upstream.Requests(), 1, "the run went no further")
}

// heldStore holds each Create and Fork until release is closed, then fails
// it with err, if set.
type heldStore struct {
	robby.Store
	release chan struct{}
	err     error
}

func (s *heldStore) hold(ctx context.Context) error {
	select {
	case <-s.release:
		return s.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *heldStore) Create(ctx context.Context, c robby.Conversation, msgs ...robby.Message) (robby.Conversation, error) {
	if err := s.hold(ctx); err != nil {
		return robby.Conversation{}, err
	}
	return s.Store.Create(ctx, c, msgs...)
}

func (s *heldStore) Fork(ctx context.Context, c robby.Conversation, from string, n int64, msgs ...robby.Message) (robby.Conversation, error) {
	if err := s.hold(ctx); err != nil {
		return robby.Conversation{}, err
	}
	return s.Store.Fork(ctx, c, from, n, msgs...)
}

// TestResponsesAskWhileStoring: the model is asked while the response's
// conversation is written, and the client reads nothing before it is: no ID
// that names nothing. Then the response streams and is kept, for a new
// conversation (Create) and for one that goes on (Fork).
func TestResponsesAskWhileStoring(t *testing.T) {
	upstream := newServer(t)
	store := &heldStore{Store: newStore(t), release: make(chan struct{})}
	client := clientFor(serveResponses(t, upstream, openaiserver.Options{Store: store}), "k")
	upstream.Reply(robbytest.Text("One."), robbytest.Text("Two."))
	prev := ""
	for i, want := range []string{"One.", "Two."} {
		events, errs := make(chan string, 64), make(chan error, 1)
		go func() {
			defer close(events)
			s := client.Responses.NewStreaming(t.Context(), ask("Go on", prev))
			defer s.Close()
			for s.Next() {
				if ev := s.Current(); ev.Type == "response.completed" {
					prev = ev.Response.ID
				}
				events <- s.Current().Type
			}
			errs <- s.Err()
		}()
		require.Eventually(t, func() bool { return len(upstream.Requests()) == i+1 }, 5*time.Second, time.Millisecond,
			"the model asked while the store holds the write")
		select {
		case ev := <-events:
			t.Fatalf("the client read %q before the response was stored", ev)
		case <-time.After(50 * time.Millisecond):
		}
		store.release <- struct{}{}
		var kinds []string
		for ev := range events {
			kinds = append(kinds, ev)
		}
		require.NoError(t, <-errs)
		require.NotEmpty(t, kinds)
		assert.Equal(t, "response.created", kinds[0])
		assert.Equal(t, "response.completed", kinds[len(kinds)-1])
		got, err := client.Responses.Get(t.Context(), prev, responses.ResponseGetParams{})
		require.NoError(t, err)
		assert.Equal(t, want, got.OutputText())
		assert.Equal(t, "completed", string(got.Status))
	}
}

// TestResponsesStoreFailsWhileAsking: a conversation that cannot be written
// stops the model's request. The client gets the store's 500, for a streamed
// and a plain request, and nothing is kept.
func TestResponsesStoreFailsWhileAsking(t *testing.T) {
	upstream := newServer(t)
	inner := newStore(t)
	store := &heldStore{Store: inner, release: make(chan struct{}), err: errors.New("disk full")}
	client := clientFor(serveResponses(t, upstream, openaiserver.Options{Store: store}), "k")
	upstream.Reply(robbytest.Text("Never seen.").WithDelay(time.Minute), robbytest.Text("Never seen.").WithDelay(time.Minute))
	for i, stream := range []bool{true, false} {
		errs := make(chan error, 1)
		go func() {
			if !stream {
				_, err := client.Responses.New(t.Context(), ask("Hello", ""))
				errs <- err
				return
			}
			s := client.Responses.NewStreaming(t.Context(), ask("Hello", ""))
			defer s.Close()
			for s.Next() {
				t.Errorf("event %q of a response not stored", s.Current().Type)
			}
			errs <- s.Err()
		}()
		require.Eventually(t, func() bool { return len(upstream.Requests()) == i+1 }, 5*time.Second, time.Millisecond)
		start := time.Now()
		close(store.release)
		var apiErr *openai.Error
		require.ErrorAs(t, <-errs, &apiErr)
		assert.Equal(t, http.StatusInternalServerError, apiErr.StatusCode)
		assert.Less(t, time.Since(start), 10*time.Second, "the model's request was stopped")
		store.release = make(chan struct{})
	}
	convs, _, err := inner.List(t.Context(), "", robby.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, convs)
}
