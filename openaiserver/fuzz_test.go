package openaiserver_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/sqlitestore"
)

// The fuzz targets of the endpoint, one a route that reads a body. Their
// seed corpora of real-format inputs are under testdata/fuzz/<target>,
// which plain `go test` runs as regression tests; `go test -run '^$' -fuzz
// '^FuzzServerRequest$' -fuzztime 2m ./openaiserver` (and so on) explores
// from there.

// fuzzUpstream is an in-memory chat-completions endpoint: it answers with
// a call of the first tool the client offered, if any, else a call of
// the agent's add tool when the user says "add" and no tool result is in
// yet, else "ok". It counts the requests it failed (with a status of 400
// or more) and the others.
type fuzzUpstream struct {
	handler        http.Handler
	failed, served atomic.Int64
}

func newFuzzUpstream() *fuzzUpstream {
	u := new(fuzzUpstream)
	u.handler = robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		for _, name := range req.Tools {
			if name != "" && name != "add" {
				return robbytest.ToolCalls(robbytest.Call(name, `{}`))
			}
		}
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" && strings.Contains(req.Messages[n-1].Content, "add") {
			return robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)).WithText("Adding.")
		}
		return robbytest.Text("ok")
	})
	return u
}

func (u *fuzzUpstream) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	u.handler.ServeHTTP(rec, req)
	if req.Body != nil {
		req.Body.Close()
	}
	if rec.Code >= 400 {
		u.failed.Add(1)
	} else {
		u.served.Add(1)
	}
	res := rec.Result()
	res.Request = req
	return res, nil
}

// fuzzAgent returns an agent named "m" whose upstream is in memory and
// always answers, and the upstream.
func fuzzAgent(f *testing.F) (map[string]*robby.Agent, *fuzzUpstream) {
	upstream := newFuzzUpstream()
	agent, err := robby.New(robby.WithBaseURL("http://upstream.invalid/v1"), robby.WithAPIKey("k"), robby.WithModel("test-model"), robby.WithTools(addTool),
		robby.WithRequestOptions(option.WithHTTPClient(&http.Client{Transport: upstream}), option.WithMaxRetries(0)))
	require.NoError(f, err)
	f.Cleanup(func() { agent.Close() })
	return map[string]*robby.Agent{"m": agent}, upstream
}

// fuzzLimit is the fuzzed endpoints' MaxRequestBytes.
const fuzzLimit = 64 << 10

// fuzzPost posts body to path (stream forces "stream":true, put first so
// that the body's own wins) and checks the answer's status, and an error's
// shape. It returns the answer, its body, and whether it is a 200 to
// check further.
func fuzzPost(t *testing.T, h http.Handler, upstream *fuzzUpstream, path string, body []byte, stream bool) (*http.Response, []byte, bool) {
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); stream && len(trimmed) > 0 && trimmed[0] == '{' {
		rest := trimmed[1:]
		if r := bytes.TrimLeft(rest, " \t\r\n"); len(r) > 0 && r[0] != '}' {
			rest = append([]byte(","), rest...)
		}
		body = append([]byte(`{"stream":true`), rest...)
	}
	failedBefore := upstream.failed.Load()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	upstreamFailed := upstream.failed.Load() != failedBefore
	res := rec.Result()
	got := rec.Body.Bytes()

	switch res.StatusCode {
	case http.StatusOK:
	case http.StatusBadRequest, http.StatusNotFound:
	case http.StatusRequestEntityTooLarge:
		require.Greater(t, len(body), fuzzLimit, "413 for a body within the limit")
	default:
		require.True(t, upstreamFailed, "status %d though the upstream answered: %s", res.StatusCode, got)
	}
	if len(body) > fuzzLimit {
		require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, "%s", got)
	}
	if res.StatusCode != http.StatusOK {
		require.Equal(t, "application/json", res.Header.Get("Content-Type"))
		var e struct {
			Error *struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(got, &e), "an error body that is not JSON: %s", got)
		require.NotNil(t, e.Error, "an error body not in OpenAI's shape: %s", got)
		require.NotEmpty(t, e.Error.Message, "%s", got)
		require.NotEmpty(t, e.Error.Type, "%s", got)
		return res, got, false
	}
	var head struct {
		Stream bool `json:"stream"`
	}
	require.NoError(t, json.Unmarshal(body, &head), "200 for a body that is not JSON")
	want := "application/json"
	if head.Stream {
		want = "text/event-stream"
	}
	require.Equal(t, want, res.Header.Get("Content-Type"), "%s", got)
	return res, got, true
}

// FuzzServerRequest posts a request body to the chat-completions route and
// checks the answer's status and shape.
func FuzzServerRequest(f *testing.F) {
	agents, upstream := fuzzAgent(f)
	srv := openaiserver.New(agents, openaiserver.Options{MaxRequestBytes: fuzzLimit, ShowToolSteps: true})

	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		res, got, ok := fuzzPost(t, srv, upstream, "/v1/chat/completions", body, stream)
		if !ok {
			return
		}
		if res.Header.Get("Content-Type") == "application/json" {
			var c openai.ChatCompletion
			require.NoError(t, c.UnmarshalJSON(got), "%s", got)
			require.Equal(t, "chat.completion", string(c.Object))
			require.Equal(t, "m", c.Model, "the answer names another model")
			require.Len(t, c.Choices, 1, "%s", got)
			fuzzCheckFinish(t, c.Choices[0].FinishReason, len(c.Choices[0].Message.ToolCalls), got)
			return
		}
		require.True(t, bytes.HasSuffix(got, []byte("data: [DONE]\n\n")), "a stream not ended by [DONE]: %s", got)
		var events [][]byte // as openai-go's client reads them
		for dec := ssestream.NewDecoder(res); dec.Next(); {
			events = append(events, dec.Event().Data)
		}
		require.Equal(t, "[DONE]\n", string(events[len(events)-1]))
		finish, calls := "", 0
		for _, data := range events[:len(events)-1] {
			var c openai.ChatCompletionChunk
			require.NoError(t, c.UnmarshalJSON(data), "%s", data)
			var fields map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(data, &fields))
			require.NotContains(t, fields, "error", "an error event: %s", data)
			require.Equal(t, "chat.completion.chunk", string(c.Object))
			require.Equal(t, "m", c.Model, "a chunk names another model")
			for _, ch := range c.Choices {
				calls += len(ch.Delta.ToolCalls)
				if ch.FinishReason != "" {
					require.Empty(t, finish, "two finish reasons: %s", got)
					finish = ch.FinishReason
				}
			}
		}
		fuzzCheckFinish(t, finish, calls, got)
	})
}

// FuzzResponsesRequest posts a request body to POST /v1/responses, with a
// store, and checks the answer's status and shape: a response object, or
// events numbered from 0 that start with response.created and end with
// response.completed or response.incomplete (or, when the upstream
// failed, an error event and response.failed).
func FuzzResponsesRequest(f *testing.F) {
	agents, upstream := fuzzAgent(f)
	store, err := sqlitestore.Open(f.Context(), filepath.Join(f.TempDir(), "fuzz.db"))
	require.NoError(f, err)
	f.Cleanup(func() { store.Close() })
	srv := openaiserver.New(agents, openaiserver.Options{MaxRequestBytes: fuzzLimit, Store: store})

	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		failedBefore := upstream.failed.Load()
		res, got, ok := fuzzPost(t, srv, upstream, "/v1/responses", body, stream)
		if !ok {
			return
		}
		upstreamFailed := upstream.failed.Load() != failedBefore
		check := func(r responses.Response, data []byte) {
			require.Equal(t, "response", string(r.Object), "%s", data)
			require.Equal(t, "m", r.Model, "the response names another model")
			require.True(t, strings.HasPrefix(r.ID, "resp_"), "%s", data)
			if r.Status == "failed" {
				require.True(t, upstreamFailed, "failed though the upstream answered: %s", data)
				return
			}
			require.Contains(t, []string{"completed", "incomplete"}, string(r.Status), "%s", data)
			for _, item := range r.Output {
				if item.Type == "function_call" {
					require.NotEmpty(t, item.CallID, "%s", data)
					require.NotEmpty(t, item.Name, "%s", data)
				}
			}
		}
		if res.Header.Get("Content-Type") == "application/json" {
			var r responses.Response
			require.NoError(t, r.UnmarshalJSON(got), "%s", got)
			check(r, got)
			return
		}
		var events []responses.ResponseStreamEventUnion
		for dec := ssestream.NewDecoder(res); dec.Next(); {
			var ev responses.ResponseStreamEventUnion
			require.NoError(t, ev.UnmarshalJSON(dec.Event().Data), "%s", dec.Event().Data)
			require.Equal(t, dec.Event().Type, ev.Type, "the event's name and type differ")
			require.EqualValues(t, len(events), ev.SequenceNumber, "%s", got)
			require.True(t, ev.Type != "error" || upstreamFailed, "an error event though the upstream answered: %s", got)
			events = append(events, ev)
		}
		require.NotEmpty(t, events, "%s", got)
		require.Equal(t, "response.created", events[0].Type)
		last := events[len(events)-1]
		require.Contains(t, []string{"response.completed", "response.incomplete", "response.failed"}, last.Type)
		check(last.Response, got)
	})
}

// fuzzCheckFinish checks a reply's finish reason against its tool calls.
func fuzzCheckFinish(t *testing.T, finish string, calls int, got []byte) {
	t.Helper()
	switch finish {
	case "tool_calls":
		require.NotZero(t, calls, "finish_reason tool_calls without calls: %s", got)
	case "stop", "length":
		require.Zero(t, calls, "calls with finish_reason %s: %s", finish, got)
	default:
		t.Fatalf("finish_reason %q: %s", finish, got)
	}
}
