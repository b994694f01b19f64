package openaiserver_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
)

// The fuzz target of the endpoint. Its seed corpus of real-format inputs
// is under testdata/fuzz/FuzzServerRequest, which plain `go test` runs as
// regression tests; `go test -run '^$' -fuzz '^FuzzServerRequest$'
// -fuzztime 2m ./openaiserver` explores from there.

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

// FuzzServerRequest posts a request body to the OpenAI-compatible endpoint
// (stream forces "stream":true, put first so that the body's own wins) and
// checks the answer's status and shape. The agent's upstream is in memory
// and always answers.
func FuzzServerRequest(f *testing.F) {
	upstream := newFuzzUpstream()
	agent, err := robby.New(robby.WithBaseURL("http://upstream.invalid/v1"), robby.WithAPIKey("k"), robby.WithModel("test-model"), robby.WithTools(addTool),
		robby.WithRequestOptions(option.WithHTTPClient(&http.Client{Transport: upstream}), option.WithMaxRetries(0)))
	require.NoError(f, err)
	f.Cleanup(func() { agent.Close() })
	const limit = 64 << 10
	srv := openaiserver.New(map[string]*robby.Agent{"m": agent}, openaiserver.Options{MaxRequestBytes: limit, ShowToolSteps: true})

	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		if trimmed := bytes.TrimLeft(body, " \t\r\n"); stream && len(trimmed) > 0 && trimmed[0] == '{' {
			rest := trimmed[1:]
			if r := bytes.TrimLeft(rest, " \t\r\n"); len(r) > 0 && r[0] != '}' {
				rest = append([]byte(","), rest...)
			}
			body = append([]byte(`{"stream":true`), rest...)
		}
		failedBefore := upstream.failed.Load()
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		upstreamFailed := upstream.failed.Load() != failedBefore
		res := rec.Result()
		got := rec.Body.Bytes()

		switch res.StatusCode {
		case http.StatusOK:
		case http.StatusBadRequest, http.StatusNotFound:
		case http.StatusRequestEntityTooLarge:
			require.Greater(t, len(body), limit, "413 for a body within the limit")
		default:
			require.True(t, upstreamFailed, "status %d though the upstream answered: %s", res.StatusCode, got)
		}
		if len(body) > limit {
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
			return
		}

		var head struct {
			Stream bool `json:"stream"`
		}
		require.NoError(t, json.Unmarshal(body, &head), "200 for a body that is not JSON")
		if !head.Stream {
			require.Equal(t, "application/json", res.Header.Get("Content-Type"))
			var c openai.ChatCompletion
			require.NoError(t, c.UnmarshalJSON(got), "%s", got)
			require.Equal(t, "chat.completion", string(c.Object))
			require.Equal(t, "m", c.Model, "the answer names another model")
			require.Len(t, c.Choices, 1, "%s", got)
			fuzzCheckFinish(t, c.Choices[0].FinishReason, len(c.Choices[0].Message.ToolCalls), got)
			return
		}
		require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
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
