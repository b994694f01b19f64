package robby

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/robby-go/robby/internal/chatwire"

	"github.com/robby-go/robby/internal/llmserver"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

type lookupArgs struct {
	Key string `json:"key" jsonschema:"what to look up"`
}

// lookupTool answers with some 80 tokens of text.
var lookupTool = NewTool("lookup", "Looks a key up", func(_ context.Context, in lookupArgs) (string, error) {
	return fmt.Sprintf("%s: %s", in.Key, strings.Repeat("the value of the key, as stored. ", 12)), nil
})

// checkToolPairsSent fails the test for a request that sends a tool call
// without its result or a result without its call.
func checkToolPairsSent(t *testing.T, i int, req robbytest.Request) {
	t.Helper()
	open := map[string]bool{}
	for j, m := range req.Messages {
		switch m.Role {
		case "tool":
			require.True(t, open[m.ToolCallID], "request %d, message %d: result of call %q, which no message before made", i, j, m.ToolCallID)
			delete(open, m.ToolCallID)
		default:
			require.Empty(t, open, "request %d, message %d: a call before it has no result", i, j)
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		}
	}
	require.Empty(t, open, "request %d: the last calls have no result", i)
}

// A 200-turn conversation with tool calls stays under a 2,000-token
// budget with the drop policy: no extra model call, every request valid,
// the conversation kept whole.
func TestCompactionDrop200Turns(t *testing.T) {
	srv := newServer(t)
	srv.ContextLimit(2000, robbytest.LlamaCpp) // the server refuses what robby would send over the budget
	a := newTestAgent(t, srv, WithTools(lookupTool), WithSystem("You look things up."),
		WithParams(openai.ChatCompletionNewParams{MaxCompletionTokens: openai.Int(500)}),
		WithContextWindow(2500), WithCompaction(DropOldestTurns()))
	compactions := 0
	for turn := range 200 {
		srv.Reply(
			robbytest.ToolCalls(robbytest.Call("lookup", fmt.Sprintf(`{"key":"k%d"}`, turn))),
			robbytest.Text(fmt.Sprintf("The value of k%d is stored.", turn)),
		)
		for ev, err := range a.Stream(t.Context(), fmt.Sprintf("What is k%d?", turn)) {
			require.NoError(t, err, "turn %d", turn)
			if ev.Kind == EventCompaction {
				compactions++
				c := ev.Compaction
				assert.Equal(t, "drop", c.Policy)
				assert.Positive(t, c.TurnsDropped)
				assert.Less(t, c.TokensAfter, c.TokensBefore)
				assert.LessOrEqual(t, c.TokensAfter, 2000)
				assert.Equal(t, 2000, c.Budget)
			}
		}
	}
	reqs := srv.Requests()
	require.Len(t, reqs, 400, "one request a model turn, no more")
	for i, req := range reqs {
		assert.LessOrEqual(t, req.Tokens, 2000, "request %d", i)
		assert.Equal(t, "system", req.Messages[0].Role, "request %d keeps the system prompt", i)
		checkToolPairsSent(t, i, req)
	}
	assert.Positive(t, compactions)
	assert.Less(t, compactions, 100, "compaction leaves room for the next turns")
	assert.Len(t, a.Messages(), 1+200*4, "the conversation keeps everything")
}

// The pinned first user message goes with every request.
func TestCompactionPinnedFirstMessage(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv, WithContextWindow(600), WithCompaction(DropOldestTurns()), WithPinnedFirstMessage())
	for turn := range 30 {
		srv.Reply(robbytest.Text(strings.Repeat("words ", 20)))
		_, err := a.Run(t.Context(), fmt.Sprintf("question %d: %s", turn, strings.Repeat("more ", 10)))
		require.NoError(t, err)
	}
	reqs := srv.Requests()
	for i, req := range reqs {
		assert.True(t, strings.HasPrefix(req.Messages[0].Content, "question 0:"), "request %d starts with %q", i, req.Messages[0].Content)
		assert.LessOrEqual(t, req.Tokens, 450, "request %d", i)
	}
	assert.Less(t, len(reqs[29].Messages), 20)
}

// Recovery: each provider's context-length error makes robby compact to
// what the error says and send again.
func TestCompactionRecoversFromEachProvider(t *testing.T) {
	for _, provider := range []string{robbytest.OpenAI, robbytest.LlamaCpp, robbytest.Ollama, robbytest.VLLM, robbytest.Gemini} {
		t.Run(provider, func(t *testing.T) {
			srv := newServer(t)
			srv.ContextLimit(1000, provider)
			a := newTestAgent(t, srv, WithCompaction(DropOldestTurns())) // no window known
			a.SetMessages(longHistory(40))
			srv.Reply(robbytest.Text("fine"))
			var compacted *Compaction
			for ev, err := range a.Stream(t.Context(), "and now?") {
				require.NoError(t, err)
				if ev.Kind == EventCompaction {
					compacted = ev.Compaction
				}
			}
			reqs := srv.Requests()
			require.Len(t, reqs, 2, "the refused request, then the compacted one")
			assert.Greater(t, reqs[0].Tokens, 1000)
			assert.LessOrEqual(t, reqs[1].Tokens, 1000)
			assert.Equal(t, "and now?", reqs[1].Messages[len(reqs[1].Messages)-1].Content)
			require.NotNil(t, compacted)
			assert.True(t, compacted.Retry)
			assert.Positive(t, compacted.TurnsDropped)
			// The window is learned: the next request is fitted first.
			srv.Reply(robbytest.Text("again"))
			_, err := a.Run(t.Context(), "more?")
			require.NoError(t, err)
			assert.Len(t, srv.Requests(), 3)
		})
	}
}

// longHistory is a conversation of n exchanges of some 60 tokens each.
func longHistory(n int) []openai.ChatCompletionMessageParamUnion {
	var msgs []openai.ChatCompletionMessageParamUnion
	for i := range n {
		msgs = append(msgs, openai.UserMessage(fmt.Sprintf("question %d: %s", i, strings.Repeat("tell me more ", 8))),
			openai.AssistantMessage(fmt.Sprintf("answer %d: %s", i, strings.Repeat("here it is ", 8))))
	}
	return msgs
}

// An error that gives no size still leads to one compaction and retry.
func TestCompactionRecoversWithoutSizes(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv, WithCompaction(DropOldestTurns()))
	a.SetMessages(longHistory(40))
	srv.Reply(robbytest.Error(http.StatusBadRequest, `{"error":"the prompt is longer than the context length currently available to the model; try a shorter prompt"}`),
		robbytest.Text("fine"))
	res, err := a.Run(t.Context(), "and now?")
	require.NoError(t, err)
	assert.Equal(t, "fine", res.Text)
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Less(t, reqs[1].Tokens, reqs[0].Tokens*3/4)
}

// A second refusal is a typed error naming the sizes.
func TestCompactionSecondFailure(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv, WithCompaction(DropOldestTurns()))
	a.SetMessages(longHistory(40))
	srv.Reply(robbytest.ContextLengthError(robbytest.LlamaCpp, 5000, 512), robbytest.ContextLengthError(robbytest.LlamaCpp, 700, 512))
	_, err := a.Run(t.Context(), "and now?")
	require.ErrorIs(t, err, ErrContextLength)
	var cle *ContextLengthError
	require.ErrorAs(t, err, &cle)
	assert.Equal(t, 512, cle.Window)
	assert.Equal(t, 700, cle.Tokens)
	assert.Positive(t, cle.Budget)
	assert.Less(t, cle.Budget, 512)
	assert.Positive(t, cle.Estimated)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	for _, s := range []string{"700 tokens sent", "window 512", fmt.Sprintf("budget %d", cle.Budget)} {
		assert.Contains(t, err.Error(), s)
	}
	assert.Len(t, srv.Requests(), 2)
	assert.Len(t, a.Messages(), 80, "the conversation is left as it was, to retry")
}

// Without a policy, a context-length error is typed at once, not retried.
func TestContextLengthErrorWithoutCompaction(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv)
	srv.Reply(robbytest.ContextLengthError(robbytest.OpenAI, 9000, 8192))
	_, err := a.Run(t.Context(), "hi")
	var cle *ContextLengthError
	require.ErrorAs(t, err, &cle)
	assert.True(t, isContextLengthError(err))
	assert.Equal(t, 8192, cle.Window)
	assert.Equal(t, 9000, cle.Tokens)
	assert.Len(t, srv.Requests(), 1)
}

// Real bodies of each provider's error are recognised, with their sizes;
// other errors are not.
func TestContextOverflowBodies(t *testing.T) {
	tests := []struct {
		name           string
		body           string
		tokens, window int
	}{
		{"openai", `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 8866 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, 8866, 8192},
		{"openai, no sizes", `{"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}}`, 0, 0},
		{"llama.cpp", `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}}`, 14429, 8192},
		{"llama.cpp, before the sizes", `{"error":{"code":400,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"invalid_request_error"}}`, 0, 0},
		{"ollama", `{"error":"{\"error\":{\"code\":400,\"message\":\"request (8889 tokens) exceeds the available context size (4096 tokens), try increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":8889,\"n_ctx\":4096}}"}`, 8889, 4096},
		{"ollama, shift off", `{"error":"the prompt is longer than the context length currently available to the model; try a shorter prompt"}`, 0, 0},
		{"vllm", `{"object":"error","message":"This model's maximum context length is 131072 tokens. However, you requested 156632 tokens (152536 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`, 152536, 131072},
		{"gemini", `[{"error":{"code":400,"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]`, 1200293, 1048576},
		{"openrouter", `{"error":{"message":"This endpoint's maximum context length is 32768 tokens. However, you requested about 42832 tokens (42832 of text input). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","code":400}}`, 0, 32768},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := &APIError{StatusCode: 400, Message: chatwire.ProviderMessage([]byte(tt.body)), body: []byte(tt.body)}
			over, ok := contextOverflow(err)
			require.True(t, ok)
			assert.True(t, isContextLengthError(fmt.Errorf("wrapped: %w", err)))
			assert.Equal(t, tt.tokens, over.Tokens)
			assert.Equal(t, tt.window, over.Window)
		})
	}
	for _, body := range []string{
		`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`,
		`{"error":{"message":"max_tokens is too large: 9000. This model supports at most 4096 completion tokens","type":"invalid_request_error"}}`,
	} {
		_, ok := contextOverflow(&APIError{StatusCode: 400, body: []byte(body)})
		assert.False(t, ok, body)
		assert.False(t, isContextLengthError(&APIError{StatusCode: 400, body: []byte(body)}))
	}
	_, ok := contextOverflow(errors.New("maximum context length"))
	assert.False(t, ok, "only the provider's errors")
}

// A message larger than the whole window is sent cut, with a note; the
// conversation keeps it whole.
func TestCompactionCutsAHugeMessage(t *testing.T) {
	srv := newServer(t)
	srv.ContextLimit(1000, robbytest.LlamaCpp)
	a := newTestAgent(t, srv, WithContextWindow(1200), WithCompaction(DropOldestTurns()))
	huge := strings.Repeat("a long line of a log file, ", 1000)
	srv.Reply(robbytest.Text("seen"))
	var compacted *Compaction
	for ev, err := range a.Stream(t.Context(), huge) {
		require.NoError(t, err)
		if ev.Kind == EventCompaction {
			compacted = ev.Compaction
		}
	}
	req := srv.Requests()[0]
	assert.LessOrEqual(t, req.Tokens, 1000)
	last := req.Messages[len(req.Messages)-1].Content
	assert.True(t, strings.HasPrefix(last, "a long line"))
	assert.Contains(t, last, "[robby: cut to fit the context window")
	require.NotNil(t, compacted)
	assert.Equal(t, 1, compacted.MessagesCut)
	assert.Equal(t, huge, a.Messages()[0].OfUser.Content.OfString.Value)
}

// The summarize policy asks the model for a summary, once in a while, and
// sends it marked, in place of the turns it sums up.
func TestCompactionSummarize(t *testing.T) {
	srv := newServer(t)
	summaries := 0
	a := newTestAgent(t, srv, WithSystem("Be brief."), WithContextWindow(1000), WithCompaction(SummarizeOldTurns()),
		WithPrices(map[string]Price{"test-model": {Input: 1, Output: 2}}))
	for turn := range 40 {
		srv.Reply(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			if strings.HasPrefix(req.Messages[0].Content, "You compact a conversation") {
				summaries++
				srv.Reply(robbytest.Text(fmt.Sprintf("answer %d", turn))) // the turn's own answer comes next
				return robbytest.Text(fmt.Sprintf("The user asked %d questions.", turn))
			}
			return robbytest.Text(fmt.Sprintf("answer %d: %s", turn, strings.Repeat("so it is ", 10)))
		}))
		for ev, err := range a.Stream(t.Context(), fmt.Sprintf("question %d: %s", turn, strings.Repeat("tell me ", 10))) {
			require.NoError(t, err)
			if ev.Kind == EventCompaction {
				assert.Equal(t, "summarize", ev.Compaction.Policy)
				assert.True(t, strings.HasPrefix(ev.Compaction.Summary, "The user asked"))
				assert.Positive(t, ev.Compaction.Usage.PromptTokens, "the summary request's usage")
				u := ev.Compaction.Usage
				assert.InDelta(t, float64(u.PromptTokens+2*u.CompletionTokens)/1e6, u.Cost, 1e-12, "the summary's cost")
			}
		}
	}
	assert.Positive(t, summaries)
	assert.Less(t, summaries, 15)
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	assert.Equal(t, "Be brief.", last.Messages[0].Content)
	assert.Equal(t, "system", last.Messages[1].Role)
	assert.True(t, strings.HasPrefix(last.Messages[1].Content, SummaryMarker+"The user asked"), last.Messages[1].Content)
	for i, req := range reqs {
		assert.LessOrEqual(t, req.Tokens, 1000-250, "request %d", i)
	}
	assert.Len(t, a.Messages(), 1+40*2)
}

// A function of the user's chooses what is sent; what it returns is
// checked.
func TestCompactWith(t *testing.T) {
	srv := newServer(t)
	var budgets []int
	keepLast := func(_ context.Context, msgs []openai.ChatCompletionMessageParamUnion, budget int) ([]openai.ChatCompletionMessageParamUnion, error) {
		budgets = append(budgets, budget)
		return append(msgs[:1:1], msgs[len(msgs)-1]), nil
	}
	a := newTestAgent(t, srv, WithSystem("S"), WithContextWindow(500), WithCompaction(CompactWith(keepLast)))
	a.AddMessages(longHistory(20)...)
	srv.Reply(robbytest.Text("ok"))
	_, err := a.Run(t.Context(), "last question")
	require.NoError(t, err)
	msgs := srv.Requests()[0].Messages
	require.Len(t, msgs, 2)
	assert.Equal(t, "S", msgs[0].Content)
	assert.Equal(t, "last question", msgs[1].Content)
	assert.Equal(t, []int{375}, budgets)

	orphan := func(context.Context, []openai.ChatCompletionMessageParamUnion, int) ([]openai.ChatCompletionMessageParamUnion, error) {
		return []openai.ChatCompletionMessageParamUnion{openai.ToolMessage("result", "call_1")}, nil
	}
	b := newTestAgent(t, srv, WithContextWindow(500), WithCompaction(CompactWith(orphan)))
	b.AddMessages(longHistory(20)...)
	_, err = b.Run(t.Context(), "last question")
	require.ErrorContains(t, err, `the result of tool call "call_1"`)
	assert.Len(t, srv.Requests(), 1, "nothing sent")
}

// The window is asked of llama.cpp's /props and Ollama's /api/show when
// not given.
func TestContextWindowDiscovery(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"llama.cpp": func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && r.URL.Path == "/props" {
				fmt.Fprint(w, `{"default_generation_settings":{"n_ctx":800,"params":{}},"total_slots":1,"model_path":"m.gguf"}`)
				return
			}
			http.NotFound(w, r)
		},
		"ollama": func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && r.URL.Path == "/api/version" {
				fmt.Fprint(w, `{"version":"0.12.6"}`)
				return
			}
			if r.Method == http.MethodPost && r.URL.Path == "/api/show" {
				fmt.Fprint(w, `{"parameters":"num_ctx                        800\nstop                           \"<|im_end|>\"","model_info":{"general.architecture":"qwen2","qwen2.context_length":32768}}`)
				return
			}
			http.NotFound(w, r)
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/chat/completions") {
					robbytest.Text("ok").ServeHTTP(w, r)
					return
				}
				h(w, r)
			}))
			defer srv.Close()
			a, err := New(WithBaseURL(srv.URL+"/v1"), WithAPIKey(""), WithModel("m"), WithCompaction(DropOldestTurns()))
			require.NoError(t, err)
			defer a.Close()
			a.SetMessages(longHistory(40))
			var compacted *Compaction
			for ev, err := range a.Stream(t.Context(), "and?") {
				require.NoError(t, err)
				if ev.Kind == EventCompaction {
					compacted = ev.Compaction
				}
			}
			require.NotNil(t, compacted)
			assert.Equal(t, 600, compacted.Budget, "800 less a quarter for the answer")
			assert.False(t, compacted.Retry)
		})
	}
	assert.Equal(t, 128000, llmserver.KnownWindow("gpt-4o-mini"))
	assert.Equal(t, 8192, llmserver.KnownWindow("gpt-4"))
	assert.Equal(t, 0, llmserver.KnownWindow("ai/qwen2.5"))
}

// The provider's count of the last request replaces robby's estimate of
// what it already sent.
func TestCompactionUsesProviderCounts(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv, WithContextWindow(4000), WithCompaction(DropOldestTurns()))
	// The provider counts twice what robby estimates: robby compacts
	// earlier than its own estimate would.
	for turn := range 30 {
		srv.Reply(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			return robbytest.Text(strings.Repeat("fine words ", 10)).WithUsage(2*req.Tokens, 20)
		}))
		_, err := a.Run(t.Context(), fmt.Sprintf("question %d: %s", turn, strings.Repeat("tell me ", 10)))
		require.NoError(t, err)
	}
	for i, req := range srv.Requests() {
		assert.LessOrEqual(t, 2*req.Tokens, 3000+200, "request %d: %d tokens as the provider counts them", i, 2*req.Tokens)
	}
}

// A run's own system message goes after the system prompt, counted in the
// budget, whatever compaction leaves out.
func TestCompactionWithRunSystem(t *testing.T) {
	srv := newServer(t)
	srv.ContextLimit(700, robbytest.LlamaCpp)
	a := newTestAgent(t, srv, WithSystem("S"), WithContextWindow(800), WithCompaction(DropOldestTurns()))
	a.AddMessages(longHistory(20)...)
	srv.Reply(robbytest.Text("ok"))
	extra := "Context: " + strings.Repeat("a fact to know. ", 30)
	_, err := a.Run(t.Context(), "and?", WithRunSystem(extra))
	require.NoError(t, err)
	req := srv.Requests()[0]
	assert.LessOrEqual(t, req.Tokens, 600)
	assert.Equal(t, "S", req.Messages[0].Content)
	assert.Equal(t, extra, req.Messages[1].Content)
	assert.Equal(t, "and?", req.Messages[len(req.Messages)-1].Content)
	assert.Less(t, len(req.Messages), 20)
}

// BenchmarkFit measures the budget check alone, on a conversation of
// 1,000 messages of about 1 KB that fits (see BenchmarkLongConversation's
// robby-compaction for the whole turn).
func BenchmarkFit(b *testing.B) {
	a, err := New(WithModel("m"), WithCompaction(DropOldestTurns()), WithContextWindow(1<<22))
	require.NoError(b, err)
	defer a.Close()
	for i := range 1000 {
		a.AddMessages(openai.UserMessage(fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum ", 85))))
	}
	t := turn{n: 1}
	for b.Loop() {
		req, err := a.turnRequest(&t)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := a.fit(b.Context(), &t, req, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// Whatever the conversation and the budget, the drop policy sends the system
// prompt first and the pending prompt last. It sends every tool call with its
// results. It fits the budget unless the last turn alone does not.
func TestCompactionProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 2026))
	for round := range 300 {
		var msgs []openai.ChatCompletionMessageParamUnion
		msgs = append(msgs, openai.SystemMessage("You help."))
		for turn := range 1 + rng.IntN(30) {
			msgs = append(msgs, openai.UserMessage(fmt.Sprintf("q%d %s", turn, strings.Repeat("word ", rng.IntN(60)))))
			for step := range rng.IntN(3) {
				var calls []openai.ChatCompletionMessageToolCallUnionParam
				n := 1 + rng.IntN(3)
				for c := range n {
					calls = append(calls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: fmt.Sprintf("call_%d_%d_%d", turn, step, c), Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "lookup", Arguments: `{}`}}})
				}
				msgs = append(msgs, openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{ToolCalls: calls}})
				for c := range n {
					msgs = append(msgs, openai.ToolMessage(strings.Repeat("result ", rng.IntN(80)), fmt.Sprintf("call_%d_%d_%d", turn, step, c)))
				}
			}
			msgs = append(msgs, openai.AssistantMessage(strings.Repeat("answer ", rng.IntN(40))))
		}
		midRun := round%2 == 1 // no prompt pending: a later turn of a run
		if midRun && msgs[len(msgs)-2].OfTool != nil {
			msgs = msgs[:len(msgs)-1] // the run is waiting for the model after its tools
		}
		window := 100 + rng.IntN(3000)
		a, err := New(WithModel("m"), WithContextWindow(window), WithCompaction(DropOldestTurns()), WithPinnedFirstMessage())
		require.NoError(t, err)
		a.SetMessages(msgs)
		tu := turn{n: 1}
		if !midRun {
			tu.pending = promptMessage("the prompt")
		}
		req, err := a.turnRequest(&tu)
		require.NoError(t, err)
		f, err := a.fit(t.Context(), &tu, req, nil)
		require.NoError(t, err)
		var body struct {
			Messages []struct {
				Role       string `json:"role"`
				Content    string `json:"content"`
				ToolCallID string `json:"tool_call_id"`
				ToolCalls  []struct {
					ID string `json:"id"`
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		req.head = []byte("{")
		require.NoError(t, json.Unmarshal(req.body(), &body), "round %d", round)
		sent := body.Messages
		require.Equal(t, "You help.", sent[0].Content, "round %d", round)
		require.True(t, strings.HasPrefix(sent[1].Content, "q0 "), "round %d: the first question is pinned", round)
		if midRun {
			want := msgs[len(msgs)-1]
			last := sent[len(sent)-1]
			if want.OfTool != nil {
				require.Equal(t, want.OfTool.ToolCallID, last.ToolCallID, "round %d: the last turn is kept", round)
			} else {
				require.Equal(t, "assistant", last.Role, "round %d: the last turn is kept", round)
			}
		} else {
			require.Equal(t, "the prompt", sent[len(sent)-1].Content, "round %d", round)
		}
		open := map[string]bool{}
		for i, m := range sent {
			if m.Role == "tool" {
				require.True(t, open[m.ToolCallID], "round %d, message %d: a result without its call", round, i)
				delete(open, m.ToolCallID)
				continue
			}
			require.Empty(t, open, "round %d, message %d: a call without its result", round, i)
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		}
		require.Empty(t, open, "round %d", round)
		if f.budget > 0 && f.sent > f.budget {
			// Only the pinned messages and the prompt, or the last turn,
			// are left, with cuts.
			if !midRun {
				require.LessOrEqual(t, len(sent), 3, "round %d: %d tokens for a budget of %d in %d messages", round, f.sent, f.budget, len(sent))
			}
		}
		a.Close()
	}
}

// A clone sends what its original would: the summary is not asked again.
func TestCompactionClone(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv, WithContextWindow(600), WithCompaction(SummarizeOldTurns()))
	a.AddMessages(longHistory(20)...)
	srv.Reply(robbytest.Text("The user asked many questions."), robbytest.Text("ok"))
	_, err := a.Run(t.Context(), "first")
	require.NoError(t, err)
	require.Len(t, srv.Requests(), 2, "the summary, then the answer")
	c := a.Clone()
	srv.Reply(robbytest.Text("ok again"))
	_, err = c.Run(t.Context(), "second")
	require.NoError(t, err)
	reqs := srv.Requests()
	require.Len(t, reqs, 3, "no second summary")
	assert.True(t, strings.HasPrefix(reqs[2].Messages[0].Content, SummaryMarker+"The user asked"))
}
