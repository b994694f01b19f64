package openaiserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared/constant"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
)

var citySchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"name":       map[string]any{"type": "string"},
		"population": map[string]any{"type": "integer"},
	},
	"required":             []any{"name", "population"},
	"additionalProperties": false,
}

// askCity asks for a city, as JSON that fits citySchema.
func askCity(text string) responses.ResponseNewParams {
	p := ask(text, "")
	p.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
		OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "city", Schema: citySchema, Strict: openai.Bool(true)}}}
	return p
}

func TestResponsesStructuredOutput(t *testing.T) {
	srv := newServer(t)
	client := clientFor(serveResponses(t, srv, openaiserver.Options{Store: newStore(t)}), "")
	srv.Reply(robbytest.Answer(`{"name":"Paris","population":2100000}`))
	resp, err := client.Responses.New(t.Context(), askCity("Describe Paris"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"Paris","population":2100000}`, resp.OutputText())

	// The model was asked with the client's response_format, as it is.
	var body struct {
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string          `json:"name"`
				Strict bool            `json:"strict"`
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &body))
	assert.Equal(t, "json_schema", body.ResponseFormat.Type)
	assert.Equal(t, "city", body.ResponseFormat.JSONSchema.Name)
	assert.True(t, body.ResponseFormat.JSONSchema.Strict)

	// The response echoes text, and so does its stored form.
	assert.Equal(t, "json_schema", resp.Text.Format.Type)
	assert.Equal(t, "city", resp.Text.Format.Name)
	got, err := client.Responses.Get(t.Context(), resp.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Equal(t, "city", got.Text.Format.Name)
	assert.JSONEq(t, `{"name":"Paris","population":2100000}`, got.OutputText())
}

func TestResponsesStructuredOutputRepairs(t *testing.T) {
	srv := newServer(t)
	client := clientFor(serveResponses(t, srv, openaiserver.Options{Store: newStore(t)}), "")
	srv.Reply(robbytest.Text(`{"name":"Paris"}`), robbytest.Text(`{"name":"Paris","population":2100000}`))
	resp, err := client.Responses.New(t.Context(), askCity("Describe Paris"))
	require.NoError(t, err)
	// The answer alone, not the one repaired.
	require.Len(t, resp.Output, 1)
	assert.JSONEq(t, `{"name":"Paris","population":2100000}`, resp.OutputText())
	assert.Contains(t, string(srv.Requests()[1].Body), "population", "the repair names what is missing")
	got, err := client.Responses.Get(t.Context(), resp.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"Paris","population":2100000}`, got.OutputText())
}

func TestResponsesStructuredOutputThatNeverFitsFails(t *testing.T) {
	srv := newServer(t)
	url := serveResponses(t, srv, openaiserver.Options{})
	srv.Fallback(robbytest.Text(`{"name":"Paris"}`))
	client := clientFor(url, "")
	_, err := client.Responses.New(t.Context(), askCity("Describe Paris"))
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "invalid_answer", apiErr.Code)
	assert.Contains(t, apiErr.Message, "population")

	kinds, _, last := streamed(t, client, askCity("Describe Paris"))
	assert.Contains(t, kinds, "error")
	assert.Equal(t, "response.failed", kinds[len(kinds)-1])
	assert.Equal(t, responses.ResponseStatusFailed, last.Status)
}

func TestResponsesStructuredOutputStreamsTextDeltas(t *testing.T) {
	srv := newServer(t)
	client := clientFor(serveResponses(t, srv, openaiserver.Options{}), "")
	srv.Reply(robbytest.Answer(`{"name":"Paris","population":2100000}`))
	kinds, text, last := streamed(t, client, askCity("Describe Paris"))
	assert.Contains(t, kinds, "response.output_text.delta")
	assert.JSONEq(t, `{"name":"Paris","population":2100000}`, text)
	assert.JSONEq(t, text, last.OutputText())

	// With the answer tool (a model that takes no response_format), the
	// answer still comes as text.
	srv.Reply(robbytest.SchemaRefusal(robbytest.OpenAI), robbytest.Answer(`{"name":"Lyon","population":500000}`))
	kinds, text, last = streamed(t, clientFor(serveResponses(t, srv, openaiserver.Options{}), ""), askCity("Describe Lyon"))
	assert.Contains(t, kinds, "response.output_text.delta")
	assert.JSONEq(t, `{"name":"Lyon","population":500000}`, text)
	assert.JSONEq(t, text, last.OutputText())
	assert.Contains(t, srv.Requests()[2].Tools, "final_answer")
}

func TestResponsesJSONObject(t *testing.T) {
	srv := newServer(t)
	client := clientFor(serveResponses(t, srv, openaiserver.Options{}), "")
	srv.Reply(robbytest.Text(`{"ok":true}`))
	p := ask("Answer in JSON", "")
	p.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
		OfJSONObject: &responses.ResponseFormatJSONObjectParam{Type: constant.JSONObject("json_object")}}}
	resp, err := client.Responses.New(t.Context(), p)
	require.NoError(t, err)
	assert.JSONEq(t, `{"ok":true}`, resp.OutputText())
	assert.JSONEq(t, `{"type":"json_object"}`, string(srv.Requests()[0].ResponseFormat))
}

func TestResponsesStructuredOutputWithClientTools(t *testing.T) {
	srv := newServer(t)
	client := clientFor(serveResponses(t, srv, openaiserver.Options{Store: newStore(t)}), "")
	srv.Reply(robbytest.ToolCalls(robbytest.Call("lookup", `{"q":"Paris"}`)))
	p := askCity("Describe Paris")
	p.Tools = []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "lookup",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}}}}
	resp, err := client.Responses.New(t.Context(), p)
	require.NoError(t, err)
	require.Len(t, resp.Output, 1)
	assert.Equal(t, "function_call", resp.Output[0].Type, "the client's call ends the response, as without a format")

	srv.Reply(robbytest.Answer(`{"name":"Paris","population":2100000}`))
	next := askCity("")
	next.PreviousResponseID = openai.String(resp.ID)
	out := responses.ResponseInputItemParamOfFunctionCallOutput("2.1 million")
	out.OfFunctionCallOutput.CallID = openai.String(resp.Output[0].CallID)
	next.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{out}}
	next.Tools = p.Tools
	resp, err = client.Responses.New(t.Context(), next)
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"Paris","population":2100000}`, resp.OutputText())
}

func TestResponsesTextErrors(t *testing.T) {
	srv := newServer(t)
	url := serveResponses(t, srv, openaiserver.Options{})
	for body, want := range map[string]string{
		`{"model":"robby","input":"hi","text":{"verbosity":"high"}}`:                                                    "'text.verbosity'",
		`{"model":"robby","input":"hi","text":{"format":{"type":"grammar"}}}`:                                           "'text.format.type'",
		`{"model":"robby","input":"hi","text":{"format":{"type":"json_schema","schema":{}}}}`:                           "'text.format.name'",
		`{"model":"robby","input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":{"type":"string"}}}}`: "'text.format.schema'",
		`{"model":"robby","input":"hi","prompt":{"id":"p"}}`:                                                            "'prompt'",
	} {
		res, err := http.Post(url+"/v1/responses", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		assert.Equal(t, http.StatusBadRequest, res.StatusCode, body)
		assert.Contains(t, string(b), want, body)
	}
	assert.Empty(t, srv.Requests())
}
