package openaiserver_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
)

// serveResponses starts the endpoint with opts for one agent named
// "robby" on upstream, and returns its URL.
func serveResponses(t *testing.T, upstream *robbytest.Server, opts openaiserver.Options, agentOpts ...robby.Option) string {
	t.Helper()
	a := newTestAgent(t, upstream, agentOpts...)
	hs := httptest.NewServer(openaiserver.New(map[string]*robby.Agent{"robby": a}, opts))
	t.Cleanup(hs.Close)
	return hs.URL
}

func clientFor(url, token string) openai.Client {
	return openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey(token), option.WithMaxRetries(0))
}

func ask(text string, previous string) responses.ResponseNewParams {
	p := responses.ResponseNewParams{Model: "robby", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(text)}}
	if previous != "" {
		p.PreviousResponseID = openai.String(previous)
	}
	return p
}

// streamed runs a streamed response and returns its event types, the text
// of its deltas and the response it ended with.
func streamed(t *testing.T, client openai.Client, p responses.ResponseNewParams) ([]string, string, responses.Response) {
	t.Helper()
	s := client.Responses.NewStreaming(t.Context(), p)
	defer s.Close()
	var kinds []string
	var text strings.Builder
	var last responses.Response
	seq := int64(0)
	for s.Next() {
		ev := s.Current()
		kinds = append(kinds, ev.Type)
		assert.Equal(t, seq, ev.SequenceNumber, "events numbered in order")
		seq++
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed", "response.incomplete", "response.failed":
			last = ev.Response
		}
	}
	require.NoError(t, s.Err())
	return kinds, text.String(), last
}

// TestResponsesContinueAStoredConversation: the client sends only its new
// message and the ID of the response it continues; the model gets the
// whole conversation.
func TestResponsesContinueAStoredConversation(t *testing.T) {
	upstream := newServer(t)
	url := serveResponses(t, upstream, openaiserver.Options{Store: newStore(t)}, robby.WithSystem("You remember."))
	client := clientFor(url, "k")

	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			upstream.Reply(robbytest.Text("Hello Bob.").WithUsage(7, 3), robbytest.Text("Your name is Bob."))
			first := ask("My name is Bob.", "")
			var r1 responses.Response
			if stream {
				var text string
				_, text, r1 = streamed(t, client, first)
				assert.Equal(t, "Hello Bob.", text)
			} else {
				res, err := client.Responses.New(t.Context(), first)
				require.NoError(t, err)
				r1 = *res
			}
			assert.Equal(t, "Hello Bob.", r1.OutputText())
			assert.Equal(t, "completed", string(r1.Status))
			assert.Equal(t, "robby", r1.Model)
			assert.EqualValues(t, 10, r1.Usage.TotalTokens)
			require.True(t, strings.HasPrefix(r1.ID, "resp_"), r1.ID)

			res, err := client.Responses.New(t.Context(), ask("What is my name?", r1.ID))
			require.NoError(t, err)
			assert.Equal(t, "Your name is Bob.", res.OutputText())
			assert.Equal(t, r1.ID, res.PreviousResponseID)

			reqs := upstream.Requests()
			last := reqs[len(reqs)-1].Messages
			require.Len(t, last, 4, "system, the first question, its answer, the new question")
			assert.Equal(t, "My name is Bob.", last[1].Content)
			assert.Equal(t, "Hello Bob.", last[2].Content)
			assert.Equal(t, "What is my name?", last[3].Content)

			got, err := client.Responses.Get(t.Context(), r1.ID, responses.ResponseGetParams{})
			require.NoError(t, err)
			assert.Equal(t, "Hello Bob.", got.OutputText(), "a response reads back as it was, not as it was continued")
			assert.Equal(t, "robby", got.Model)
		})
	}
}

// TestResponsesStreamEvents: the events of a streamed response, in
// OpenAI's order.
func TestResponsesStreamEvents(t *testing.T) {
	upstream := newServer(t)
	upstream.Reply(robbytest.Text("one two three"))
	url := serveResponses(t, upstream, openaiserver.Options{Store: newStore(t)})
	kinds, text, last := streamed(t, clientFor(url, "k"), ask("count", ""))
	assert.Equal(t, "one two three", text)
	require.GreaterOrEqual(t, len(kinds), 9)
	assert.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}, kinds[:4])
	assert.Equal(t, "response.output_text.delta", kinds[4])
	assert.Equal(t, []string{"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}, kinds[len(kinds)-4:])
	assert.Equal(t, "one two three", last.OutputText())
	assert.Equal(t, "completed", string(last.Status))
}

// TestResponsesBelongToTheirUser: a token's user cannot read, continue or
// delete the responses of another's token: they do not exist for it.
func TestResponsesBelongToTheirUser(t *testing.T) {
	upstream := newServer(t)
	url := serveResponses(t, upstream, openaiserver.Options{Store: newStore(t),
		Tokens: map[string]string{"alice-token": "alice", "alice-laptop": "alice", "bob-token": "bob"}})
	alice, laptop, bob := clientFor(url, "alice-token"), clientFor(url, "alice-laptop"), clientFor(url, "bob-token")

	upstream.Reply(robbytest.Text("Alice's secret is swordfish."))
	r, err := alice.Responses.New(t.Context(), ask("Remember swordfish.", ""))
	require.NoError(t, err)

	notFound := func(err error) {
		t.Helper()
		var oe *openai.Error
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, http.StatusNotFound, oe.StatusCode)
		assert.NotContains(t, oe.Message, "swordfish")
		assert.Contains(t, oe.Message, "not found")
	}
	_, err = bob.Responses.Get(t.Context(), r.ID, responses.ResponseGetParams{})
	notFound(err)
	_, err = bob.Responses.New(t.Context(), ask("What was the secret?", r.ID))
	notFound(err)
	notFound(bob.Responses.Delete(t.Context(), r.ID))
	_, err = bob.Responses.InputItems.List(t.Context(), r.ID, responses.InputItemListParams{})
	notFound(err)
	assert.Len(t, upstream.Requests(), 1, "bob's request reached the model")

	got, err := laptop.Responses.Get(t.Context(), r.ID, responses.ResponseGetParams{})
	require.NoError(t, err, "another token of the same user")
	assert.Equal(t, "Alice's secret is swordfish.", got.OutputText())

	require.NoError(t, alice.Responses.Delete(t.Context(), r.ID))
	_, err = alice.Responses.Get(t.Context(), r.ID, responses.ResponseGetParams{})
	notFound(err)
	_, err = alice.Responses.New(t.Context(), ask("again", r.ID))
	notFound(err)

	nobody := clientFor(url, "nobody")
	_, err = nobody.Responses.New(t.Context(), ask("hi", ""))
	var oe *openai.Error
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, http.StatusUnauthorized, oe.StatusCode)
}

// TestResponsesHandClientFunctionsBack: a call of a function the client
// sent ends the response with a function_call item; the client's output
// continues it.
func TestResponsesHandClientFunctionsBack(t *testing.T) {
	upstream := newServer(t)
	url := serveResponses(t, upstream, openaiserver.Options{Store: newStore(t)}, robby.WithTools(addTool))
	client := clientFor(url, "k")
	location := responses.ToolParamOfFunction("get_location", map[string]any{"type": "object", "properties": map[string]any{}}, false)

	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			upstream.Reply(
				robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":1}`)),
				robbytest.ToolCalls(robbytest.Call("get_location", `{"precise":true}`)),
				robbytest.Text("You are in Paris; 1+1=2."),
			)
			p := ask("Where am I, and what is 1+1?", "")
			p.Tools = []responses.ToolUnionParam{location}
			var r1 responses.Response
			if stream {
				kinds, _, last := streamed(t, client, p)
				assert.Contains(t, kinds, "response.function_call_arguments.done")
				r1 = last
			} else {
				res, err := client.Responses.New(t.Context(), p)
				require.NoError(t, err)
				r1 = *res
			}
			require.Len(t, r1.Output, 1, "the agent's own add call stays on the server")
			call := r1.Output[0].AsFunctionCall()
			assert.Equal(t, "function_call", r1.Output[0].Type)
			assert.Equal(t, "get_location", call.Name)
			assert.Equal(t, `{"precise":true}`, call.Arguments)
			require.NotEmpty(t, call.CallID)

			out := responses.ResponseInputItemParamOfFunctionCallOutput(`{"city":"Paris"}`)
			out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
			next := responses.ResponseNewParams{Model: "robby", PreviousResponseID: openai.String(r1.ID), Tools: p.Tools,
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{out}}}
			res, err := client.Responses.New(t.Context(), next)
			require.NoError(t, err)
			assert.Equal(t, "You are in Paris; 1+1=2.", res.OutputText())

			reqs := upstream.Requests()
			last := reqs[len(reqs)-1].Messages
			assert.Equal(t, "tool", last[len(last)-1].Role)
			assert.Equal(t, `{"city":"Paris"}`, last[len(last)-1].Content)

			items, err := client.Responses.InputItems.List(t.Context(), res.ID,
				responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc})
			require.NoError(t, err)
			require.Len(t, items.Data, 3, "the question, the client's call and its output; the agent's add stays out")
			assert.Equal(t, "user", items.Data[0].Role)
			fc := items.Data[1].AsFunctionCall()
			assert.Equal(t, []string{"function_call", "get_location", `{"precise":true}`, call.CallID},
				[]string{string(fc.Type), fc.Name, fc.Arguments, fc.CallID})
			fco := items.Data[2].AsFunctionCallOutput()
			assert.Equal(t, []string{"function_call_output", call.CallID, `{"city":"Paris"}`},
				[]string{string(fco.Type), fco.CallID, fco.Output.OfString})

			_, err = client.Responses.New(t.Context(), ask("and now?", r1.ID))
			var oe *openai.Error
			require.ErrorAs(t, err, &oe, "a call left without its output")
			assert.Equal(t, http.StatusBadRequest, oe.StatusCode)
		})
	}
}

// TestResponsesNotStored: "store": false keeps nothing; without a store,
// nothing can be continued.
func TestResponsesNotStored(t *testing.T) {
	upstream := newServer(t)
	url := serveResponses(t, upstream, openaiserver.Options{Store: newStore(t)})
	client := clientFor(url, "k")
	upstream.Reply(robbytest.Text("ok"))
	p := ask("hi", "")
	p.Store = openai.Bool(false)
	r, err := client.Responses.New(t.Context(), p)
	require.NoError(t, err)
	assert.Equal(t, "ok", r.OutputText())
	_, err = client.Responses.Get(t.Context(), r.ID, responses.ResponseGetParams{})
	var oe *openai.Error
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, http.StatusNotFound, oe.StatusCode)

	noStore := serveResponses(t, upstream, openaiserver.Options{})
	upstream.Reply(robbytest.Text("stateless"))
	stateless := clientFor(noStore, "k")
	r, err = stateless.Responses.New(t.Context(), ask("hi", ""))
	require.NoError(t, err)
	assert.Equal(t, "stateless", r.OutputText())
	assert.False(t, r.JSON.ExtraFields["store"].Raw() == "true", "not stored")
	_, err = stateless.Responses.New(t.Context(), ask("more", r.ID))
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, http.StatusBadRequest, oe.StatusCode)
	assert.Contains(t, oe.Message, "keeps none")
}

// TestResponsesRefusals: requests the endpoint cannot honour are answered
// 400 in OpenAI's shape, and reach no model.
func TestResponsesRefusals(t *testing.T) {
	upstream := newServer(t)
	url := serveResponses(t, upstream, openaiserver.Options{Store: newStore(t)}, robby.WithTools(addTool))
	for name, body := range map[string]string{
		"no input":           `{"model":"robby"}`,
		"empty input":        `{"model":"robby","input":[]}`,
		"unknown item":       `{"model":"robby","input":[{"type":"item_reference","id":"x"}]}`,
		"unknown role":       `{"model":"robby","input":[{"role":"wizard","content":"hi"}]}`,
		"web search":         `{"model":"robby","input":"hi","tools":[{"type":"web_search"}]}`,
		"tool name clash":    `{"model":"robby","input":"hi","tools":[{"type":"function","name":"add"}]}`,
		"background, kept":   `{"model":"robby","input":"hi","background":true,"store":false}`,
		"background, stream": `{"model":"robby","input":"hi","background":true,"stream":true}`,
		"background, bad":    `{"model":"robby","input":"hi","background":"yes"}`,
		"unknown previous":   `{"model":"robby","input":"hi","previous_response_id":"resp_nothing_0"}`,
		"output for no one":  `{"model":"robby","input":[{"type":"function_call_output","call_id":"c9","output":"x"},{"role":"user","content":"hi"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			res, err := http.Post(url+"/v1/responses", "application/json", strings.NewReader(body))
			require.NoError(t, err)
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			assert.Contains(t, []int{400, 404}, res.StatusCode, "%s", b)
			assert.Contains(t, string(b), `"error":{"message":`)
		})
	}
	assert.Empty(t, upstream.Requests())
}
