package openaiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
)

// serve starts a Server for one agent named "robby" on upstream, and
// returns an openai-go client for it.
func serve(t *testing.T, upstream *robbytest.Server, opts openaiserver.Options, agentOpts ...robby.Option) (openai.Client, *httptest.Server) {
	t.Helper()
	a := newTestAgent(t, upstream, agentOpts...)
	hs := httptest.NewServer(openaiserver.New(map[string]*robby.Agent{"robby": a}, opts))
	t.Cleanup(hs.Close)
	client := openai.NewClient(option.WithBaseURL(hs.URL+"/v1"), option.WithAPIKey("client-key"), option.WithMaxRetries(0))
	return client, hs
}

func userParams(text string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: "robby", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}}
}

func TestServerRunsTheLoopServerSide(t *testing.T) {
	upstream := newServer(t)
	upstream.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":2,"b":2}`)).WithUsage(5, 1), robbytest.Text("2 + 2 = 4").WithUsage(9, 4))
	client, _ := serve(t, upstream, openaiserver.Options{}, robby.WithTools(addTool), robby.WithSystem("You add."))

	res, err := client.Chat.Completions.New(t.Context(), userParams("2+2?"))
	require.NoError(t, err)
	require.Len(t, res.Choices, 1)
	assert.Equal(t, "2 + 2 = 4", res.Choices[0].Message.Content)
	assert.Equal(t, "stop", res.Choices[0].FinishReason)
	assert.Empty(t, res.Choices[0].Message.ToolCalls, "server-side tool steps stay out of the transcript")
	assert.Equal(t, "robby", res.Model)
	assert.Equal(t, "chat.completion", string(res.Object))
	assert.EqualValues(t, 19, res.Usage.TotalTokens)

	reqs := upstream.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "system", reqs[0].Messages[0].Role, "the agent's system prompt comes first")
	assert.Equal(t, "test-model", reqs[0].Model, "the agent's own model is asked")
	assert.Equal(t, "4", reqs[1].Messages[3].Content)
}

func TestServerStreams(t *testing.T) {
	upstream := newServer(t)
	upstream.Reply(
		robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)).WithText("Adding. "),
		robbytest.Text("The sum is 3.").WithUsage(10, 5),
	)
	client, _ := serve(t, upstream, openaiserver.Options{ShowToolSteps: true}, robby.WithTools(addTool))

	p := userParams("1+2?")
	p.StreamOptions.IncludeUsage = openai.Bool(true)
	s := client.Chat.Completions.NewStreaming(t.Context(), p)
	defer s.Close()
	var acc openai.ChatCompletionAccumulator
	var reasoning strings.Builder
	chunks := 0
	for s.Next() {
		c := s.Current()
		chunks++
		acc.AddChunk(c)
		for _, ch := range c.Choices {
			var r string
			if json.Unmarshal([]byte(ch.Delta.JSON.ExtraFields["reasoning_content"].Raw()), &r) == nil {
				reasoning.WriteString(r)
			}
		}
	}
	require.NoError(t, s.Err())
	assert.Greater(t, chunks, 5)
	assert.Equal(t, "Adding. The sum is 3.", acc.Choices[0].Message.Content)
	assert.Equal(t, "stop", acc.Choices[0].FinishReason)
	assert.EqualValues(t, 30, acc.Usage.TotalTokens, "usage chunk with include_usage")
	assert.Contains(t, reasoning.String(), `→ add {"a":1,"b":2}`)
	assert.Contains(t, reasoning.String(), "← add: 3")
}

func TestServerStreamEndsWithDone(t *testing.T) {
	upstream := newServer(t)
	upstream.Reply(robbytest.Text("hi"))
	_, hs := serve(t, upstream, openaiserver.Options{})
	res, err := http.Post(hs.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"robby","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	body := string(b)
	assert.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	assert.True(t, strings.HasSuffix(body, "data: [DONE]\n\n"), body)
	assert.NotContains(t, body, `"usage"`, "no usage chunk unless asked for")
}

func TestServerHandsClientToolsBack(t *testing.T) {
	upstream := newServer(t)
	upstream.Reply(
		robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":1}`)),
		robbytest.ToolCalls(robbytest.Call("get_location", `{}`)),
		robbytest.Text("You are in Paris; 1+1=2."),
	)
	client, _ := serve(t, upstream, openaiserver.Options{}, robby.WithTools(addTool))
	location := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_location", Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{}},
	})
	p := userParams("Where am I, and what is 1+1?")
	p.Tools = []openai.ChatCompletionToolUnionParam{location}

	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			if stream {
				upstream.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":1}`)),
					robbytest.ToolCalls(robbytest.Call("get_location", `{}`)), robbytest.Text("You are in Paris; 1+1=2."))
			}
			var msg openai.ChatCompletionMessage
			var finish string
			if stream {
				s := client.Chat.Completions.NewStreaming(t.Context(), p)
				var acc openai.ChatCompletionAccumulator
				for s.Next() {
					acc.AddChunk(s.Current())
				}
				require.NoError(t, s.Err())
				s.Close()
				msg, finish = acc.Choices[0].Message, acc.Choices[0].FinishReason
			} else {
				res, err := client.Chat.Completions.New(t.Context(), p)
				require.NoError(t, err)
				msg, finish = res.Choices[0].Message, res.Choices[0].FinishReason
			}
			assert.Equal(t, "tool_calls", finish)
			require.Len(t, msg.ToolCalls, 1)
			call := msg.ToolCalls[0]
			assert.Equal(t, "get_location", call.Function.Name)
			assert.Equal(t, "call_0_get_location", call.ID)

			next := p
			msg.ToolCalls[0].Type = "function"
			next.Messages = append(slicesClone(p.Messages), msg.ToParam(), openai.ToolMessage(`{"city":"Paris"}`, call.ID))
			res, err := client.Chat.Completions.New(t.Context(), next)
			require.NoError(t, err)
			assert.Equal(t, "You are in Paris; 1+1=2.", res.Choices[0].Message.Content)
		})
	}
	reqs := upstream.Requests()
	assert.ElementsMatch(t, []string{"add", "get_location"}, reqs[0].Tools, "the client's tools are offered next to the agent's")
	last := reqs[2].Messages
	assert.Equal(t, "tool", last[len(last)-1].Role)
	assert.Equal(t, `{"city":"Paris"}`, last[len(last)-1].Content)
}

func slicesClone[T any](s []T) []T { return append([]T(nil), s...) }

func TestServerClientParametersWin(t *testing.T) {
	upstream := newServer(t)
	upstream.Reply(robbytest.Text("ok"))
	client, _ := serve(t, upstream, openaiserver.Options{}, robby.WithParams(openai.ChatCompletionNewParams{Temperature: openai.Float(0.2), Seed: openai.Int(1)}))
	p := userParams("hi")
	p.Temperature = openai.Float(0.9)
	p.MaxTokens = openai.Int(50)
	p.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"END"}}
	p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
		openai.TextContentPart("What is this?"),
		openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64,iVBORw0KGgo="}),
	})}
	_, err := client.Chat.Completions.New(t.Context(), p)
	require.NoError(t, err)
	var sent map[string]any
	require.NoError(t, json.Unmarshal(upstream.Requests()[0].Body, &sent))
	assert.Equal(t, 0.9, sent["temperature"])
	assert.EqualValues(t, 1, sent["seed"], "the agent's defaults stay when the client sets none")
	assert.EqualValues(t, 50, sent["max_tokens"])
	assert.Equal(t, []any{"END"}, sent["stop"])
	assert.Equal(t, "test-model", sent["model"])
	assert.Contains(t, string(upstream.Requests()[0].Body), `"image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}`)
}

func TestServerErrors(t *testing.T) {
	upstream := newServer(t)
	_, hs := serve(t, upstream, openaiserver.Options{Tokens: map[string]string{"s3cret": ""}, MaxRequestBytes: 1024})
	post := func(auth, body string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", hs.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		var v map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&v))
		return res.StatusCode, v["error"].(map[string]any)
	}
	hello := `{"model":"robby","messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name, auth, body string
		status           int
		message          string
	}{
		{"no token", "", hello, 401, "bearer token"},
		{"wrong token", "nope", hello, 401, "bearer token"},
		{"malformed JSON", "s3cret", `{"model":`, 400, "Invalid JSON"},
		{"no messages", "s3cret", `{"model":"robby","messages":[]}`, 400, "'messages' is required"},
		{"unknown model", "s3cret", `{"model":"gpt-9","messages":[{"role":"user","content":"hi"}]}`, 404, "The model 'gpt-9' does not exist."},
		{"null message", "s3cret", `{"model":"robby","messages":[null]}`, 400, "not a message"},
		{"unknown role", "s3cret", `{"model":"robby","messages":[{"role":"wizard","content":"hi"}]}`, 400, "messages[0] is not a message"},
		{"unanswered tool call", "s3cret", `{"model":"robby","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, 400, `tool call "c1" has no tool message`},
		{"custom tool", "s3cret", `{"model":"robby","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"custom","custom":{"name":"grammar"}}]}`, 400, "only function tools"},
		{"too large", "s3cret", `{"model":"robby","messages":[{"role":"user","content":"` + strings.Repeat("x", 2000) + `"}]}`, 413, "larger than 1024 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, e := post(tt.auth, tt.body)
			assert.Equal(t, tt.status, status)
			assert.Contains(t, e["message"], tt.message)
			assert.NotEmpty(t, e["type"])
		})
	}
	assert.Empty(t, upstream.Requests(), "no bad request reached the model")

	t.Run("upstream error keeps its status", func(t *testing.T) {
		upstream.Reply(robbytest.Error(400, `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error"}}`))
		status, e := post("s3cret", hello)
		assert.Equal(t, 400, status)
		assert.Equal(t, "upstream: This model's maximum context length is 8192 tokens.", e["message"])
	})
	t.Run("upstream error while streaming, before any byte", func(t *testing.T) {
		upstream.Reply(robbytest.Error(503, "model not loaded"))
		status, e := post("s3cret", `{"model":"robby","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		assert.Equal(t, 503, status)
		assert.Equal(t, "upstream: model not loaded", e["message"])
	})
	t.Run("openai-go sees an *openai.Error", func(t *testing.T) {
		client := openai.NewClient(option.WithBaseURL(hs.URL+"/v1"), option.WithAPIKey("s3cret"), option.WithMaxRetries(0))
		_, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "nope",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		var oe *openai.Error
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, 404, oe.StatusCode)
		assert.Equal(t, "model_not_found", oe.Code)
	})
}

func TestServerToolNameClash(t *testing.T) {
	client, _ := serve(t, newServer(t), openaiserver.Options{}, robby.WithTools(addTool))
	p := userParams("hi")
	p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "add"})}
	_, err := client.Chat.Completions.New(t.Context(), p)
	var oe *openai.Error
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, 400, oe.StatusCode)
}

func TestServerModels(t *testing.T) {
	upstream := newServer(t)
	a := newTestAgent(t, upstream)
	hs := httptest.NewServer(openaiserver.New(map[string]*robby.Agent{"zeta": a, "alpha": a}, openaiserver.Options{}))
	defer hs.Close()
	client := openai.NewClient(option.WithBaseURL(hs.URL+"/v1"), option.WithAPIKey("x"))
	page, err := client.Models.List(t.Context())
	require.NoError(t, err)
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	assert.Equal(t, []string{"alpha", "zeta"}, ids)
}

func TestServerClientDisconnectCancelsTools(t *testing.T) {
	wait, started, cancelled := waitingTool("wait")
	upstream := newServer(t)
	upstream.Reply(robbytest.ToolCalls(robbytest.Call("wait", `{}`)))
	client, _ := serve(t, upstream, openaiserver.Options{}, robby.WithTools(wait))
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-started; cancel() }()
	s := client.Chat.Completions.NewStreaming(ctx, userParams("wait"))
	for s.Next() {
	}
	s.Close()
	assert.Eventually(t, cancelled.Load, 30*time.Second, 5*time.Millisecond)
}

// TestServerManyConversations runs 100 streamed conversations at once, each
// asking its own question: each must get its own answer.
func TestServerManyConversations(t *testing.T) {
	const n = 100
	upstream := newServer(t)
	echo := robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		time.Sleep(10 * time.Millisecond) // keep them all in flight together
		return robbytest.Text("answer to " + req.Messages[len(req.Messages)-1].Content)
	})
	for range n {
		upstream.Reply(echo)
	}
	client, _ := serve(t, upstream, openaiserver.Options{}, robby.WithSystem("sys"))
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			question := fmt.Sprintf("question %d", i)
			s := client.Chat.Completions.NewStreaming(t.Context(), userParams(question))
			defer s.Close()
			var text strings.Builder
			for s.Next() {
				for _, ch := range s.Current().Choices {
					text.WriteString(ch.Delta.Content)
				}
			}
			assert.NoError(t, s.Err())
			assert.Equal(t, "answer to "+question, text.String())
		})
	}
	wg.Wait()
	for _, req := range upstream.Requests() {
		assert.Len(t, req.Messages, 2, "a conversation saw another's messages")
	}
}

func TestServerKeepsProviderParametersAndRefusesMistypedOnes(t *testing.T) {
	upstream := newServer(t)
	upstream.Reply(robbytest.Text("ok"))
	agentParams := openai.ChatCompletionNewParams{}
	agentParams.SetExtraFields(map[string]any{"repetition_penalty": 1.1})
	_, hs := serve(t, upstream, openaiserver.Options{}, robby.WithParams(agentParams))
	post := func(body string) (int, string) {
		res, err := http.Post(hs.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}

	status, body := post(`{"model":"robby","messages":[{"role":"user","content":"hi"}],"top_k":40,"min_p":0.05,"temperature":null}`)
	require.Equal(t, http.StatusOK, status, body)
	var sent map[string]any
	require.NoError(t, json.Unmarshal(upstream.Requests()[0].Body, &sent))
	assert.EqualValues(t, 40, sent["top_k"], "a provider's own parameter from the client")
	assert.EqualValues(t, 0.05, sent["min_p"])
	assert.EqualValues(t, 1.1, sent["repetition_penalty"], "a provider's own parameter of the agent")

	status, body = post(`{"model":"robby","messages":[{"role":"user","content":"hi"}],"temperature":"hot"}`)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, `\"temperature\" is not of the type the API defines`)
	assert.Len(t, upstream.Requests(), 1, "a refused request goes nowhere")
}

// TestServerRefusesBodiesThatAreNotJSON: a web page can post a form to any
// address (enctype text/plain smuggles a JSON-looking body) without a
// preflight; the endpoint answers 415 and runs nothing.
func TestServerRefusesBodiesThatAreNotJSON(t *testing.T) {
	upstream := newServer(t)
	upstream.Reply(robbytest.Text("ran"))
	_, hs := serve(t, upstream, openaiserver.Options{}, robby.WithTools(addTool))
	body := `{"model":"robby","messages":[{"role":"user","content":"add 1 and 2"}]}`
	for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
		"multipart/form-data; boundary=x", "", "application/jsonx"} {
		t.Run(ct, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, hs.URL+"/v1/chat/completions", strings.NewReader(body))
			require.NoError(t, err)
			if ct != "" {
				req.Header.Set("Content-Type", ct)
			}
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			assert.Equal(t, http.StatusUnsupportedMediaType, res.StatusCode, "%s", b)
			assert.Contains(t, string(b), "Content-Type: application/json")
		})
	}
	assert.Empty(t, upstream.Requests(), "a form post reached the model")

	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON"} {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", ct)
		upstream.Reply(robbytest.Text("ran"))
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		assert.Equal(t, http.StatusOK, res.StatusCode, ct)
	}
}

// TestServerCORS: a browser of another origin gets no permission and no
// answer unless the operator listed its origin; a listed one gets its
// preflight answered, without a token.
func TestServerCORS(t *testing.T) {
	upstream := newServer(t)
	_, hs := serve(t, upstream, openaiserver.Options{Tokens: map[string]string{"tok": ""}, CORSOrigins: []string{"https://chat.example.com"}})
	do := func(method, origin string, header http.Header) *http.Response {
		t.Helper()
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"model":"robby","messages":[{"role":"user","content":"hi"}]}`)
		}
		req, err := http.NewRequest(method, hs.URL+"/v1/chat/completions", body)
		require.NoError(t, err)
		for k, v := range header {
			req.Header[k] = v
		}
		req.Header.Set("Origin", origin)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	preflight := http.Header{"Access-Control-Request-Method": {"POST"},
		"Access-Control-Request-Headers": {"authorization,content-type,x-stainless-os"}}

	res := do(http.MethodOptions, "https://evil.example", preflight)
	assert.Equal(t, http.StatusForbidden, res.StatusCode)
	assert.Empty(t, res.Header.Get("Access-Control-Allow-Origin"))
	res = do(http.MethodPost, "https://evil.example", http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer tok"}})
	assert.Equal(t, http.StatusForbidden, res.StatusCode, "a page of another origin, even with the token")
	assert.Empty(t, res.Header.Get("Access-Control-Allow-Origin"))
	assert.Empty(t, upstream.Requests())

	res = do(http.MethodOptions, "https://chat.example.com", preflight)
	assert.Equal(t, http.StatusNoContent, res.StatusCode)
	assert.Equal(t, "https://chat.example.com", res.Header.Get("Access-Control-Allow-Origin"))
	assert.Contains(t, res.Header.Get("Access-Control-Allow-Methods"), "POST")
	assert.Equal(t, "authorization,content-type,x-stainless-os", res.Header.Get("Access-Control-Allow-Headers"))
	assert.Contains(t, res.Header.Values("Vary"), "Origin")

	upstream.Reply(robbytest.Text("hello"))
	res = do(http.MethodPost, "https://chat.example.com", http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer tok"}})
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "https://chat.example.com", res.Header.Get("Access-Control-Allow-Origin"))
	res = do(http.MethodPost, "https://chat.example.com", http.Header{"Content-Type": {"application/json"}})
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "a listed origin still needs the token")
}

// TestServerBearerSchemeIsCaseInsensitive: RFC 9110, section 11.1.
func TestServerBearerSchemeIsCaseInsensitive(t *testing.T) {
	upstream := newServer(t)
	_, hs := serve(t, upstream, openaiserver.Options{Tokens: map[string]string{"s3cret": ""}})
	for auth, want := range map[string]int{
		"Bearer s3cret": 200, "bearer s3cret": 200, "BEARER s3cret": 200, "bEaReR  s3cret": 200,
		"Basic s3cret": 401, "bearer": 401, "bearers3cret": 401, "bearer S3CRET": 401, "s3cret": 401,
	} {
		t.Run(auth, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, hs.URL+"/v1/models", nil)
			req.Header.Set("Authorization", auth)
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			res.Body.Close()
			assert.Equal(t, want, res.StatusCode)
		})
	}
}

// TestServerHidesUpstreamFailures: when the model endpoint cannot be
// reached, the client learns a request id, not the endpoint's address or
// the dial error; the logger gets both under that id.
func TestServerHidesUpstreamFailures(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	var logged strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logged.Write(p)
	}), nil))
	a, err := robby.New(robby.WithBaseURL(deadURL+"/v1"), robby.WithAPIKey(""), robby.WithModel("m"), robby.WithRequestOptions(option.WithMaxRetries(0)))
	require.NoError(t, err)
	defer a.Close()
	hs := httptest.NewServer(openaiserver.New(map[string]*robby.Agent{"robby": a}, openaiserver.Options{Logger: logger}))
	defer hs.Close()
	host := strings.TrimPrefix(deadURL, "http://")

	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			res, err := http.Post(hs.URL+"/v1/chat/completions", "application/json",
				strings.NewReader(fmt.Sprintf(`{"model":"robby","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream)))
			require.NoError(t, err)
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			body := string(b)
			assert.Equal(t, http.StatusBadGateway, res.StatusCode)
			id := res.Header.Get("X-Request-Id")
			require.NotEmpty(t, id)
			assert.Contains(t, body, id)
			for _, leak := range []string{host, "dial", "connection refused", "127.0.0.1", "Post "} {
				assert.NotContains(t, body, leak)
			}
			mu.Lock()
			defer mu.Unlock()
			assert.Contains(t, logged.String(), "request_id="+id)
			assert.Contains(t, logged.String(), host, "the details go to the log")
		})
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
