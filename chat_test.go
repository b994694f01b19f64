package robby

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/robby-go/robby/robbytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEndpointErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		message string
	}{
		{"openai envelope", 401, `{"error":{"message":"Incorrect API key provided: sk-...abc.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, "Incorrect API key provided: sk-...abc."},
		{"ollama unknown model", 404, `{"error":{"message":"model 'qwen9' not found","type":"not_found_error","param":null,"code":null}}`, "model 'qwen9' not found"},
		{"context too long", 400, `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, "This model's maximum context length is 8192 tokens."},
		{"llama.cpp numeric code", 400, `{"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error"}}`, "the request exceeds the available context size"},
		{"bare string", 400, `{"error":"model is required"}`, "model is required"},
		{"gemini array", 400, `[{"error":{"code":400,"message":"Invalid JSON payload received.","status":"INVALID_ARGUMENT"}}]`, "Invalid JSON payload received."},
		{"mistral object", 422, `{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","store"],"msg":"Extra inputs are not permitted"}]},"type":"invalid_request_error","param":null,"code":null}`, "Extra inputs are not permitted"},
		{"plain text", 404, "model not found\n", "model not found"},
		{"html proxy page", 502, "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>", "502 Bad Gateway"},
		{"empty body", 503, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t)
			srv.Reply(robbytest.Error(tt.status, tt.body))
			a := newTestAgent(t, srv)
			res, err := a.Run(t.Context(), "hi")
			require.Error(t, err)
			require.NotNil(t, res)
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, tt.status, apiErr.StatusCode)
			assert.Equal(t, tt.message, apiErr.Message)
			assert.Contains(t, err.Error(), fmt.Sprint(tt.status))
			assert.Contains(t, err.Error(), tt.message)
			var oe *openai.Error
			require.ErrorAs(t, err, &oe, "the openai-go error stays reachable")
			assert.Equal(t, tt.status, oe.StatusCode)
			assert.Empty(t, a.Messages(), "a failed first turn leaves the conversation as it was")
		})
	}
}

func TestRetriesHonourRetryAfter(t *testing.T) {
	srv := newServer(t)
	var first time.Time
	srv.Reply(
		robbytest.Handler(func(w http.ResponseWriter, _ *http.Request) {
			first = time.Now()
			w.Header().Set("Retry-After-Ms", "150")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"Rate limit reached","type":"requests"}}`)
		}),
		robbytest.Error(http.StatusInternalServerError, `{"error":{"message":"upstream hiccup"}}`),
		robbytest.Text("finally"),
	)
	a, err := New(WithBaseURL(srv.URL), WithAPIKey("k"), WithModel("m"))
	require.NoError(t, err)
	res, err := a.Run(t.Context(), "hi")
	require.NoError(t, err)
	assert.Equal(t, "finally", res.Text)
	assert.Len(t, srv.Requests(), 3)
	assert.GreaterOrEqual(t, time.Since(first), 150*time.Millisecond, "Retry-After-Ms was not honoured")
}

func TestNetworkErrorIsWrapped(t *testing.T) {
	srv := robbytest.NewServer()
	url := srv.URL
	srv.Close()
	a, err := New(WithBaseURL(url), WithModel("m"), WithRequestOptions(option.WithMaxRetries(0)))
	require.NoError(t, err)
	_, err = a.Run(t.Context(), "hi")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "chat completion: ")
	assert.Contains(t, err.Error(), "connection refused")
}

func TestBuildingBlocksKeepMemoryAsTheLoopDoes(t *testing.T) {
	script := func(srv *robbytest.Server) {
		srv.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)), robbytest.Text("3"))
	}
	loopSrv := newServer(t)
	script(loopSrv)
	viaLoop := newTestAgent(t, loopSrv, WithTools(addTool))
	_, err := viaLoop.Run(t.Context(), "1+2?")
	require.NoError(t, err)

	blockSrv := newServer(t)
	script(blockSrv)
	blocks := newTestAgent(t, blockSrv, WithTools(addTool))
	blocks.AddMessages(openai.UserMessage("1+2?"))
	calls, err := blocks.ToolsCompletion(t.Context())
	require.NoError(t, err)
	require.Len(t, calls, 1)
	results, err := blocks.ExecuteToolCalls(t.Context(), calls)
	require.NoError(t, err)
	assert.Equal(t, "3", results[0].Output)
	text, err := blocks.ChatCompletion(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "3", text)

	assert.Equal(t, marshal(t, viaLoop.Messages()), marshal(t, blocks.Messages()))
}

func marshal(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestChatCompletionStream(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.Text("Hello there friend"), robbytest.Text("one two three"))
	a := newTestAgent(t, srv)
	a.AddMessages(openai.UserMessage("hi"))
	var deltas []string
	text, err := a.ChatCompletionStream(t.Context(), func(d string) error { deltas = append(deltas, d); return nil })
	require.NoError(t, err)
	assert.Equal(t, "Hello there friend", text)
	assert.Equal(t, []string{"Hello ", "there ", "friend"}, deltas)
	assert.Len(t, a.Messages(), 2)

	stop := errors.New("enough")
	a.AddMessages(openai.UserMessage("count"))
	text, err = a.ChatCompletionStream(t.Context(), func(d string) error { return stop })
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, "one ", text)
	assert.Len(t, a.Messages(), 3, "a stopped answer is not added")
}

// TestAdminKeyIsNotSentForChat: an OpenAI admin key in the environment is
// for the administration API; chat completions never send it, with or
// without an API key.
func TestAdminKeyIsNotSentForChat(t *testing.T) {
	t.Setenv("OPENAI_ADMIN_KEY", "admin-secret")
	for _, key := range []string{"", "sk-test"} {
		srv := newServer(t)
		srv.Reply(robbytest.Text("ok"))
		a, err := New(WithBaseURL(srv.URL), WithAPIKey(key), WithModel("m"))
		require.NoError(t, err)
		_, err = a.Run(t.Context(), "hi")
		require.NoError(t, err)
		got := srv.Requests()[0].Header.Get("Authorization")
		assert.NotContains(t, got, "admin-secret")
		if key != "" {
			assert.Equal(t, "Bearer "+key, got)
		}
		require.NoError(t, a.Close())
	}
}
