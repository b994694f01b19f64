package robby

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robby-go/robby/internal/chatwire"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/internal/schemas"
	"github.com/robby-go/robby/robbytest"
)

type city struct {
	Name       string   `json:"name" jsonschema:"the city's name"`
	Country    string   `json:"country"`
	Population int      `json:"population"`
	Landmarks  []string `json:"landmarks"`
}

const parisJSON = `{"name": "Paris", "country": "France", "population": 2102650, "landmarks": ["Eiffel Tower", "Louvre"]}`

var paris = city{Name: "Paris", Country: "France", Population: 2102650, Landmarks: []string{"Eiffel Tower", "Louvre"}}

func TestRunTypedEachMode(t *testing.T) {
	for _, mode := range []AnswerMode{AnswerNative, AnswerTool, AnswerPrompted} {
		t.Run(mode.String(), func(t *testing.T) {
			srv := newServer(t)
			a := newTestAgent(t, srv, WithSystem("You know cities."))
			srv.Reply(robbytest.Answer(parisJSON))
			got, res, err := RunTyped[city](context.Background(), a, "Describe Paris", WithAnswerMode(mode))
			require.NoError(t, err)
			assert.Equal(t, paris, got)
			assert.Equal(t, 1, res.Turns)
			req := srv.Requests()[0]
			switch mode {
			case AnswerNative:
				var rf struct {
					Type       string `json:"type"`
					JSONSchema struct {
						Name   string         `json:"name"`
						Strict bool           `json:"strict"`
						Schema map[string]any `json:"schema"`
					} `json:"json_schema"`
				}
				require.NoError(t, json.Unmarshal(req.ResponseFormat, &rf))
				assert.Equal(t, "json_schema", rf.Type)
				assert.True(t, rf.JSONSchema.Strict)
				assert.Equal(t, false, rf.JSONSchema.Schema["additionalProperties"])
				assert.ElementsMatch(t, []any{"name", "country", "population", "landmarks"}, rf.JSONSchema.Schema["required"])
				assert.Contains(t, string(req.ResponseFormat), `"properties":{"name":`, "properties in field order")
				assert.Empty(t, req.Tools)
			case AnswerTool:
				assert.Equal(t, []string{"final_answer"}, req.Tools)
				assert.Nil(t, req.ResponseFormat)
				// The answer tool's call gets its result: the conversation
				// stays one a provider accepts.
				checkConsistent(t, a.Messages())
				srv.Reply(robbytest.Text("next"))
				_, err := a.Run(context.Background(), "and then?")
				require.NoError(t, err)
			case AnswerPrompted:
				assert.Nil(t, req.ResponseFormat)
				assert.Empty(t, req.Tools)
				assert.Equal(t, "You know cities.", req.Messages[0].Content)
				assert.Equal(t, "system", req.Messages[1].Role)
				assert.True(t, strings.HasPrefix(req.Messages[1].Content, "Answer with a single JSON object"))
				assert.Contains(t, req.Messages[1].Content, `"landmarks"`)
				// The schema is not kept in the conversation.
				assert.Equal(t, "You know cities.", a.Messages()[0].OfSystem.Content.OfString.Value)
			}
		})
	}
}

func TestRunTypedToolsStayAvailableUntilTheAnswer(t *testing.T) {
	for _, mode := range []AnswerMode{AnswerNative, AnswerTool, AnswerPrompted} {
		t.Run(mode.String(), func(t *testing.T) {
			srv := newServer(t)
			a := newTestAgent(t, srv, WithTools(addTool))
			srv.Reply(
				robbytest.ToolCalls(robbytest.Call("add", `{"a":2000000,"b":102650}`)),
				robbytest.Answer(parisJSON),
			)
			got, res, err := RunTyped[city](context.Background(), a, "Describe Paris", WithAnswerMode(mode))
			require.NoError(t, err)
			assert.Equal(t, paris, got)
			assert.Equal(t, 2, res.Turns)
			require.Len(t, res.ToolCalls, 1)
			assert.Equal(t, "2102650", res.ToolCalls[0].Output)
			for _, req := range srv.Requests() {
				assert.Contains(t, req.Tools, "add")
			}
			checkConsistent(t, a.Messages())
		})
	}
}

// badAnswer has every kind of fault the checker reports.
const badAnswer = `{"name": 42, "country": "France", "landmarks": ["Eiffel Tower"], "mayor": "Anne"}`

var badFailures = []string{
	`/: unknown field "mayor"; the fields are: name, country, population, landmarks`,
	`/name: expected string, got integer 42`,
	`/: missing required field "population"`,
}

func TestRunTypedRepairsWithTheExactFailures(t *testing.T) {
	for _, mode := range []AnswerMode{AnswerNative, AnswerTool, AnswerPrompted} {
		t.Run(mode.String(), func(t *testing.T) {
			srv := newServer(t)
			a := newTestAgent(t, srv)
			srv.Reply(robbytest.Answer(badAnswer), robbytest.Answer(parisJSON))
			got, res, err := RunTyped[city](context.Background(), a, "Describe Paris", WithAnswerMode(mode))
			require.NoError(t, err)
			assert.Equal(t, paris, got)
			assert.Equal(t, 2, res.Turns)
			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			repair := reqs[1].Messages[len(reqs[1].Messages)-1]
			for _, f := range badFailures {
				assert.Contains(t, repair.Content, "- "+f+"\n")
			}
			if mode == AnswerTool {
				assert.Equal(t, "tool", repair.Role, "the repair answers the answer tool's call")
			} else {
				assert.Equal(t, "user", repair.Role)
			}
			checkConsistent(t, a.Messages())
		})
	}
}

func TestRunTypedGivesUpWithEveryFailure(t *testing.T) {
	for _, mode := range []AnswerMode{AnswerNative, AnswerTool, AnswerPrompted} {
		t.Run(mode.String(), func(t *testing.T) {
			srv := newServer(t)
			a := newTestAgent(t, srv)
			srv.Reply(robbytest.Answer(badAnswer), robbytest.Answer(badAnswer))
			got, res, err := RunTyped[city](context.Background(), a, "Describe Paris", WithAnswerMode(mode), WithMaxRepairs(1))
			require.ErrorIs(t, err, ErrInvalidAnswer)
			var ae *AnswerError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, badAnswer, ae.Raw)
			assert.Equal(t, badFailures, ae.Failures)
			assert.Equal(t, 2, ae.Attempts)
			assert.Equal(t, mode, ae.Mode)
			assert.Zero(t, got)
			assert.Equal(t, 2, res.Turns)
			assert.Zero(t, srv.Pending())
		})
	}
}

func TestRunTypedDefaultRepairs(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv)
	srv.Reply(robbytest.Text("no JSON here"), robbytest.Text(`{"name":`), robbytest.Text(badAnswer))
	_, res, err := RunTyped[city](context.Background(), a, "Describe Paris", WithAnswerMode(AnswerNative))
	var ae *AnswerError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 1+DefaultMaxRepairs, ae.Attempts)
	assert.Equal(t, 3, res.Turns)
	reqs := srv.Requests()
	assert.Contains(t, reqs[1].Messages[len(reqs[1].Messages)-1].Content, "- not valid JSON: ")
}

func TestRunTypedFallsBackWhenNativeIsRefused(t *testing.T) {
	for _, p := range robbytest.SchemaProviders() {
		t.Run(p, func(t *testing.T) {
			srv := newServer(t)
			a := newTestAgent(t, srv)
			srv.Reply(robbytest.SchemaRefusal(p), robbytest.Answer(parisJSON))
			got, res, err := RunTyped[city](context.Background(), a, "Describe Paris")
			require.NoError(t, err)
			assert.Equal(t, paris, got)
			assert.Equal(t, 2, res.Turns)
			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			assert.NotNil(t, reqs[0].ResponseFormat)
			assert.Nil(t, reqs[1].ResponseFormat)
			assert.Equal(t, []string{"final_answer"}, reqs[1].Tools)
			assert.Equal(t, reqs[0].Messages, reqs[1].Messages, "the refused request is sent again as it was")

			// The agent and its clones remember: no more refused requests.
			srv.Reply(robbytest.Answer(parisJSON))
			_, _, err = RunTyped[city](context.Background(), a.Clone(), "Describe Paris")
			require.NoError(t, err)
			assert.Nil(t, srv.Requests()[2].ResponseFormat)
		})
	}
}

func TestRunTypedFallsBackWhenSchemaAndToolsCannotMix(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv, WithTools(addTool))
	srv.Reply(robbytest.SchemaWithToolsRefusal(), robbytest.Answer(parisJSON))
	got, _, err := RunTyped[city](context.Background(), a, "Describe Paris")
	require.NoError(t, err)
	assert.Equal(t, paris, got)
	assert.ElementsMatch(t, []string{"add", "final_answer"}, srv.Requests()[1].Tools)
}

func TestRunTypedFallsBackToPromptedWithoutTools(t *testing.T) {
	for _, p := range []string{robbytest.LlamaCpp, robbytest.Ollama, robbytest.VLLM} {
		t.Run(p, func(t *testing.T) {
			srv := newServer(t)
			a := newTestAgent(t, srv)
			srv.Reply(robbytest.SchemaRefusal(p), robbytest.ToolsRefusal(p), robbytest.Answer(parisJSON))
			got, _, err := RunTyped[city](context.Background(), a, "Describe Paris")
			require.NoError(t, err)
			assert.Equal(t, paris, got)
			last := srv.Requests()[2]
			assert.Empty(t, last.Tools)
			assert.Contains(t, last.Messages[0].Content, "Answer with a single JSON object")
		})
	}
}

func TestRunTypedDoesNotFallBackOnOtherErrors(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv)
	srv.Reply(robbytest.Error(400, `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error"}}`))
	_, res, err := RunTyped[city](context.Background(), a, "Describe Paris")
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 1, res.Turns)
	// Nor when the mode was chosen: the refusal is the caller's to see.
	srv.Reply(robbytest.SchemaRefusal(robbytest.OpenAI))
	_, _, err = RunTyped[city](context.Background(), a, "Describe Paris", WithAnswerMode(AnswerNative))
	require.ErrorAs(t, err, &apiErr)
	assert.Contains(t, apiErr.Message, "'response_format' of type 'json_schema' is not supported")
}

func TestRunTypedFallbackIsSafeForConcurrentUse(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv)
	srv.Reply(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		return robbytest.SchemaRefusal(robbytest.OpenAI)
	}))
	const n = 8
	for range 2 * n {
		srv.Reply(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			if robbytest.AsksJSONSchema(req) {
				return robbytest.SchemaRefusal(robbytest.OpenAI)
			}
			return robbytest.Answer(parisJSON)
		}))
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			got, _, err := RunTyped[city](context.Background(), a.Clone(), "Describe Paris")
			assert.NoError(t, err)
			assert.Equal(t, paris, got)
		})
	}
	wg.Wait()
	assert.Equal(t, int32(AnswerTool), a.core.answerMode.Load())
}

// The schemas people write.
type (
	address struct {
		Street string `json:"street"`
		City   string `json:"city"`
	}
	audit struct {
		CreatedBy string `json:"created_by"`
	}
	person struct {
		audit
		Name      string            `json:"name"`
		Born      time.Time         `json:"born"`
		Home      address           `json:"home"`
		Previous  []address         `json:"previous"`
		Tags      map[string]string `json:"tags"`
		Nickname  *string           `json:"nickname,omitempty"`
		Spouse    *address          `json:"spouse,omitempty"`
		Note      string            `json:"note,omitempty"`
		Score     float64           `json:"score"`
		Confirmed bool              `json:"confirmed"`
	}
	node struct {
		Value    int     `json:"value"`
		Children []*node `json:"children"`
	}
)

func TestRunTypedSchemasPeopleWrite(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv)
	const answer = `{"created_by": "clerk", "name": "Ada", "born": "1815-12-10T00:00:00Z",
		"home": {"street": "St James's Square", "city": "London"}, "previous": [],
		"tags": {"field": "mathematics"}, "nickname": null, "spouse": null, "note": null, "score": 9.5, "confirmed": true}`
	for _, mode := range []AnswerMode{AnswerNative, AnswerTool, AnswerPrompted} {
		srv.Reply(robbytest.Answer(answer))
		got, _, err := RunTyped[person](context.Background(), a, "Who was Ada Lovelace?", WithAnswerMode(mode))
		require.NoError(t, err, mode)
		assert.Equal(t, person{
			audit: audit{CreatedBy: "clerk"}, Name: "Ada", Born: time.Date(1815, 12, 10, 0, 0, 0, 0, time.UTC),
			Home: address{"St James's Square", "London"}, Previous: []address{}, Tags: map[string]string{"field": "mathematics"},
			Score: 9.5, Confirmed: true,
		}, got, mode)
	}
	// A map has no strict form: the schema is sent as it is, not strict.
	var rf struct {
		JSONSchema struct {
			Strict bool `json:"strict"`
		} `json:"json_schema"`
	}
	require.NoError(t, json.Unmarshal(srv.Requests()[0].ResponseFormat, &rf))
	assert.False(t, rf.JSONSchema.Strict)
	// A time.Time is said to be RFC 3339 (date-time), in every mode.
	for _, req := range srv.Requests() {
		assert.Contains(t, string(req.Body), "date-time")
	}

	// A bad time is a repairable failure, not a zero time.
	srv.Reply(robbytest.Answer(strings.Replace(answer, "1815-12-10T00:00:00Z", "10 December 1815", 1)))
	_, _, err := RunTyped[person](context.Background(), a, "Who?", WithMaxRepairs(0), WithAnswerMode(AnswerNative))
	var ae *AnswerError
	require.ErrorAs(t, err, &ae)
	assert.Contains(t, ae.Failures[0], "the answer does not decode into robby.person")
	assert.Contains(t, ae.Failures[0], `parsing time "10 December 1815"`)
}

func TestRunTypedRefusesWhatHasNoSchema(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv)
	_, res, err := RunTyped[node](context.Background(), a, "A tree")
	require.ErrorContains(t, err, "typed answer robby.node: ")
	assert.ErrorContains(t, err, "cycle detected for type robby.node")
	assert.NotNil(t, res)
	_, _, err = RunTyped[[]string](context.Background(), a, "A list")
	assert.ErrorContains(t, err, "an answer must be a JSON object (a struct or a map), not null or array")
	assert.Empty(t, srv.Requests(), "nothing is sent")
}

func TestRunTypedWithAnswerSchema(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv)
	schema := map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"sentiment": map[string]any{"type": "string", "enum": []any{"positive", "negative"}}},
		"required":             []any{"sentiment"},
		"additionalProperties": false,
	}
	srv.Reply(robbytest.Answer(`{"sentiment": "meh"}`), robbytest.Answer(`{"sentiment": "positive"}`))
	got, _, err := RunTyped[json.RawMessage](context.Background(), a, "How was it?", WithAnswerSchema(schema))
	require.NoError(t, err)
	assert.JSONEq(t, `{"sentiment": "positive"}`, string(got))
	reqs := srv.Requests()
	assert.Contains(t, reqs[1].Messages[len(reqs[1].Messages)-1].Content, `- /sentiment: must be one of ["positive","negative"], got "meh"`)
}

func TestStreamTypedPartials(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv)
	srv.Reply(robbytest.Answer(parisJSON))
	var partials []city
	var texts strings.Builder
	var done TypedEvent[city]
	for e, err := range StreamTyped[city](context.Background(), a, "Describe Paris") {
		switch e.Kind {
		case EventText:
			texts.WriteString(e.Delta)
		case EventPartial:
			partials = append(partials, e.Value)
		case EventDone:
			require.NoError(t, err)
			done = e
		}
	}
	assert.Equal(t, parisJSON, texts.String())
	assert.Equal(t, paris, done.Value)
	require.NotNil(t, done.Result)
	assert.Equal(t, []city{
		{Name: "Paris"},
		{Name: "Paris", Country: "France"},
		{Name: "Paris", Country: "France", Population: 2102650},
		{Name: "Paris", Country: "France", Population: 2102650, Landmarks: []string{"Eiffel Tower"}},
		paris, // `"Louvre"]}` came in one piece
	}, partials)
}

// A prompted answer whose prose has braces before the JSON ("{name}")
// still fills in as it streams.
func TestStreamTypedPartialsAfterBracesOfProse(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv)
	srv.Reply(robbytest.Text("Each city is {name, country, population, landmarks}. Paris:\n```json\n" + parisJSON + "\n```"))
	var partials []city
	var done TypedEvent[city]
	for e, err := range StreamTyped[city](context.Background(), a, "Describe Paris", WithAnswerMode(AnswerPrompted)) {
		switch e.Kind {
		case EventPartial:
			partials = append(partials, e.Value)
		case EventDone:
			require.NoError(t, err)
			done = e
		}
	}
	assert.Equal(t, paris, done.Value)
	require.NotEmpty(t, partials, "partial values after the prose's braces")
	assert.Equal(t, city{Name: "Paris"}, partials[0])
	assert.Equal(t, paris, partials[len(partials)-1])
}

func TestStreamTypedError(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv)
	srv.Reply(robbytest.Answer(badAnswer))
	var last TypedEvent[city]
	var lastErr error
	for e, err := range StreamTyped[city](context.Background(), a, "Describe Paris", WithMaxRepairs(0)) {
		last, lastErr = e, err
	}
	assert.Equal(t, EventDone, last.Kind)
	assert.ErrorIs(t, lastErr, ErrInvalidAnswer)
	assert.Zero(t, last.Value)
}

func TestStreamTypedStopsWhenTheConsumerDoes(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv)
	srv.Reply(robbytest.Answer(parisJSON))
	n := 0
	for e := range StreamTyped[city](context.Background(), a, "Describe Paris") {
		n++
		if e.Kind == EventPartial {
			break
		}
	}
	assert.Positive(t, n)
	// The conversation is free again.
	srv.Reply(robbytest.Text("ok"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := a.Run(ctx, "hi")
	require.NoError(t, err)
}

func TestAnswerModeString(t *testing.T) {
	assert.Equal(t, "prompted", AnswerPrompted.String())
	assert.Equal(t, "AnswerMode(9)", AnswerMode(9).String())
	assert.Equal(t, "partial", EventPartial.String())
	assert.True(t, errors.Is(&AnswerError{}, ErrInvalidAnswer))
}

func TestTypedOptionsAreRefusedElsewhere(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv, WithTools(addTool))
	_, err := a.Run(context.Background(), "hi", WithAnswerMode(AnswerTool))
	assert.ErrorIs(t, err, errTypedOption, "a mode without a schema")
	_, _, err = RunTyped[city](context.Background(), a, "hi", WithMaxRepairs(-1))
	assert.ErrorContains(t, err, "robby: WithMaxRepairs: -1 repairs")
	_, _, err = RunTyped[city](context.Background(), a, "hi", WithAnswerSchema(map[string]any{"type": "string"}))
	assert.ErrorContains(t, err, "WithAnswerSchema: an answer must be a JSON object")
	_, _, err = RunTyped[city](context.Background(), a, "hi", WithCallerTools(openai.FunctionDefinitionParam{Name: "ask"}))
	assert.ErrorContains(t, err, "a typed run cannot end on calls of the caller's tools")
	assert.Empty(t, srv.Requests())
}

func TestRunTypedKeepsTheRunOptions(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv, WithTools(NewTool("final_answer", "clashes", func(context.Context, addArgs) (int, error) { return 0, nil })))
	srv.Reply(robbytest.Answer(parisJSON))
	got, _, err := RunTyped[city](context.Background(), a, "Describe Paris", WithAnswerMode(AnswerTool),
		WithRunSystem("Today is Monday."), WithRunParams(openai.ChatCompletionNewParams{Temperature: openai.Float(0.25)}))
	require.NoError(t, err)
	assert.Equal(t, paris, got)
	req := srv.Requests()[0]
	assert.Equal(t, []string{"final_answer", "robby_final_answer"}, req.Tools, "the agent's tool keeps its name")
	assert.Equal(t, "Today is Monday.", req.Messages[0].Content)
	assert.Contains(t, string(req.Body), `"temperature":0.25`)
}

// TestRunWithAnswerSchema: a plain run given a schema ends on an answer
// that fits it, repaired, as a typed run does, or on calls of the
// caller's tools. A response_format of the caller's is sent as it is.
func TestRunWithAnswerSchema(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv)
	schema := map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}},
		"required": []any{"name"}, "additionalProperties": false}
	ask := openai.FunctionDefinitionParam{Name: "ask_user"}
	srv.Reply(robbytest.ToolCalls(robbytest.Call("ask_user", `{}`)))
	res, err := a.Run(context.Background(), "Name a city", WithAnswerSchema(schema), WithCallerTools(ask))
	require.NoError(t, err)
	require.Len(t, res.Pending, 1, "the run ends on the caller's call")
	assert.Empty(t, res.Text)

	srv.Reply(robbytest.Text(`{"city":"Paris"}`), robbytest.Text(`{"name":"Paris"}`))
	format := openai.ChatCompletionNewParams{ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{
		OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}}
	res, err = a.Resume(context.Background(), WithAnswerSchema(schema), WithCallerTools(ask), WithRunParams(format),
		WithToolResults(ToolResult{Call: res.Pending[0], Output: "Paris, please"}))
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"Paris"}`, res.Text)
	assert.Equal(t, 2, res.Turns, "one repair")
	reqs := srv.Requests()
	assert.JSONEq(t, `{"type":"json_object"}`, string(reqs[1].ResponseFormat))
	assert.Contains(t, string(reqs[2].Body), "name", "the repair says what is wrong")
}

// TestStreamTypedPartialsFromTheAnswerTool: in tool mode the answer's
// fields fill in as the answer tool's arguments stream.
func TestStreamTypedPartialsFromTheAnswerTool(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv)
	srv.Reply(robbytest.Answer(parisJSON))
	var partials []city
	var args strings.Builder
	var done TypedEvent[city]
	for e, err := range StreamTyped[city](context.Background(), a, "Describe Paris", WithAnswerMode(AnswerTool)) {
		require.NoError(t, err)
		switch e.Kind {
		case EventToolCallDelta:
			assert.Equal(t, "final_answer", e.ToolCall.Name)
			args.WriteString(e.Delta)
		case EventPartial:
			partials = append(partials, e.Value)
		case EventDone:
			done = e
		}
	}
	assert.JSONEq(t, parisJSON, args.String())
	assert.Equal(t, paris, done.Value)
	require.NotEmpty(t, partials)
	assert.Equal(t, city{Name: "Paris"}, partials[0])
	assert.Equal(t, paris, partials[len(partials)-1])
}

// TestTypedHeadsAreCachedAndBounded: a typed run's request head is encoded
// once per schema and streaming, and sent byte for byte as encoded afresh.
// The cache stays bounded however many schemas WithAnswerSchema gives.
func TestTypedHeadsAreCachedAndBounded(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv)
	srv.Fallback(robbytest.Answer(parisJSON))
	for range 2 {
		a.Reset()
		_, _, err := RunTyped[city](context.Background(), a, "Describe Paris", WithAnswerMode(AnswerNative))
		require.NoError(t, err)
		for _, err := range StreamTyped[city](context.Background(), a, "Describe Paris", WithAnswerMode(AnswerNative)) {
			require.NoError(t, err)
		}
		a.Reset()
	}
	reqs := srv.Requests()
	require.Len(t, reqs, 4)
	assert.Equal(t, reqs[0].Body, reqs[2].Body)
	assert.Equal(t, reqs[1].Body, reqs[3].Body)
	as := schemas.AnswerFor(reflect.TypeFor[city]())
	for i, stream := range []bool{false, true} {
		p, err := overlayParams(&a.core.params, &openai.ChatCompletionNewParams{ResponseFormat: as.ResponseFormat()})
		require.NoError(t, err)
		fresh, err := chatwire.EncodeHead(&p, stream)
		require.NoError(t, err)
		assert.True(t, bytes.HasPrefix(reqs[i].Body, fresh), "stream %v", stream)
	}

	for i := range maxTypedHeads + 8 {
		schema := map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer", "minimum": i}}}
		srv.Reply(robbytest.Answer(fmt.Sprintf(`{"n": %d}`, i)))
		_, _, err := RunTyped[json.RawMessage](context.Background(), a, "n?", WithAnswerSchema(schema), WithAnswerMode(AnswerNative))
		require.NoError(t, err)
		assert.Contains(t, string(srv.Requests()[4+i].ResponseFormat), fmt.Sprintf(`"minimum":%d`, i))
	}
	a.core.typedHeads.mu.Lock()
	defer a.core.typedHeads.mu.Unlock()
	assert.Len(t, a.core.typedHeads.heads, maxTypedHeads)
}
