package robby

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/robby-go/robby/internal/llmserver"

	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// lookupModel is a model that needs the add tool to answer: it calls it,
// then answers once it has the result. Through a grammar-bound server
// asked for a schema, it can only write an answer it guessed.
func lookupModel() robbytest.Reply {
	const guess = `{"name": "Paris", "country": "France", "population": 1, "landmarks": []}`
	return robbytest.Constrained(guess, robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			return robbytest.Answer(parisJSON)
		}
		return robbytest.ToolCalls(robbytest.Call("add", `{"a":2000000,"b":102650}`))
	}))
}

// countProbes counts the requests an agent sends to ask the server what it
// is.
func countProbes(n *atomic.Int32) Option {
	return WithRequestOptions(option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		if !strings.HasSuffix(req.URL.Path, "/chat/completions") {
			n.Add(1)
		}
		return next(req)
	}))
}

// llama.cpp, Ollama and vLLM bind the whole reply to response_format's
// grammar. So an agent with tools asks them for the answer with the answer
// tool from the start, and remembers it.
func TestRunTypedOnGrammarBoundServers(t *testing.T) {
	for _, p := range []string{robbytest.LlamaCpp, robbytest.Ollama, robbytest.VLLM} {
		t.Run(p, func(t *testing.T) {
			srv := newServer(t)
			srv.ServeAs(p)
			srv.Fallback(lookupModel())
			var probes atomic.Int32
			a := newTestAgent(t, srv, WithTools(addTool), countProbes(&probes))
			got, res, err := RunTyped[city](context.Background(), a, "Describe Paris")
			require.NoError(t, err)
			assert.Equal(t, paris, got)
			require.Len(t, res.ToolCalls, 1)
			assert.Equal(t, "2102650", res.ToolCalls[0].Output)
			assert.Equal(t, int32(AnswerTool), a.core.answerMode.Load())

			// The agent and its clones remember, without asking again.
			asked := probes.Load()
			assert.Positive(t, asked)
			_, _, err = RunTyped[city](context.Background(), a.Clone(), "Describe Paris")
			require.NoError(t, err)
			assert.Equal(t, asked, probes.Load())
			reqs := srv.Requests()
			require.Equal(t, 4, len(reqs), "two requests a run")
			for _, req := range reqs {
				assert.Nil(t, req.ResponseFormat, "no native attempt")
				assert.ElementsMatch(t, []string{"add", "final_answer"}, req.Tools)
			}
		})
	}
}

// What the grammar does to a native request with tools: the guess, the
// tool never called. Other servers, and agents without tools, keep the
// native mode.
func TestRunTypedNativeWhereTheGrammarDoesNotBlockTools(t *testing.T) {
	t.Run("the guess", func(t *testing.T) {
		srv := newServer(t)
		srv.ServeAs(robbytest.LlamaCpp)
		srv.Reply(lookupModel())
		a := newTestAgent(t, srv, WithTools(addTool))
		got, res, err := RunTyped[city](context.Background(), a, "Describe Paris", WithAnswerMode(AnswerNative))
		require.NoError(t, err)
		assert.Equal(t, 1, got.Population)
		assert.Empty(t, res.ToolCalls)
	})
	t.Run("OpenAI", func(t *testing.T) {
		srv := newServer(t)
		srv.ServeAs(robbytest.OpenAI)
		srv.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":2000000,"b":102650}`)), robbytest.Answer(parisJSON))
		a := newTestAgent(t, srv, WithTools(addTool))
		got, _, err := RunTyped[city](context.Background(), a, "Describe Paris")
		require.NoError(t, err)
		assert.Equal(t, paris, got)
		for _, req := range srv.Requests() {
			assert.NotNil(t, req.ResponseFormat)
		}
	})
	t.Run("no tools", func(t *testing.T) {
		srv := newServer(t)
		srv.ServeAs(robbytest.LlamaCpp)
		srv.Reply(robbytest.Answer(parisJSON))
		var probes atomic.Int32
		a := newTestAgent(t, srv, countProbes(&probes))
		got, _, err := RunTyped[city](context.Background(), a, "Describe Paris")
		require.NoError(t, err)
		assert.Equal(t, paris, got)
		assert.NotNil(t, srv.Requests()[0].ResponseFormat)
		assert.Zero(t, probes.Load(), "no need to ask")
	})
}

func TestServerKind(t *testing.T) {
	for _, tc := range []struct {
		provider string
		want     llmserver.Info
	}{
		{robbytest.OpenAI, llmserver.Info{}},
		{robbytest.Gemini, llmserver.Info{}},
		{robbytest.LlamaCpp, llmserver.Info{Kind: llmserver.LlamaCpp, Window: 2000}},
		{robbytest.Ollama, llmserver.Info{Kind: llmserver.Ollama}},
		{robbytest.VLLM, llmserver.Info{Kind: llmserver.VLLM}},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			srv := newServer(t)
			srv.ServeAs(tc.provider)
			srv.ContextLimit(2000, robbytest.OpenAI)
			a := newTestAgent(t, srv)
			assert.Equal(t, tc.want, a.core.server(t.Context()))
			assert.Equal(t, tc.want.Kind != llmserver.Other, tc.want.Kind.GrammarBound())
			if tc.provider == robbytest.Ollama {
				assert.Equal(t, 2000, a.core.contextWindow(t.Context()), "from /api/show")
			}
		})
	}
}

// TestServerWindowClaimClamped: a llama.cpp server claiming a window no
// model runs with (n_ctx: 1) is taken to say nothing. No turn compacts for
// it, and every request holds the whole conversation. A sane claim is kept.
func TestServerWindowClaimClamped(t *testing.T) {
	for _, tc := range []struct{ nCtx, want int }{{1, 0}, {0, 0}, {255, 0}, {256, 256}, {8192, 8192}, {1 << 40, llmserver.MaxWindow}} {
		srv := newServer(t)
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/props" {
				fmt.Fprintf(w, `{"default_generation_settings":{"n_ctx":%d}}`, tc.nCtx)
				return
			}
			target, _ := url.Parse(strings.TrimSuffix(srv.URL, "/v1"))
			httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
		}))
		t.Cleanup(front.Close)
		a, err := New(WithBaseURL(front.URL+"/v1"), WithAPIKey(""), WithModel("local"),
			WithRequestOptions(option.WithMaxRetries(0)), WithCompaction(DropOldestTurns()))
		require.NoError(t, err)
		t.Cleanup(func() { a.Close() })
		assert.Equal(t, tc.want, a.core.contextWindow(t.Context()), "n_ctx %d", tc.nCtx)
		if tc.want != 0 {
			continue
		}
		for turn := range 3 {
			srv.Reply(robbytest.Text(fmt.Sprintf("answer %d", turn)))
			for ev, err := range a.Stream(t.Context(), fmt.Sprintf("question %d", turn)) {
				require.NoError(t, err)
				assert.NotEqual(t, EventCompaction, ev.Kind, "n_ctx %d, turn %d", tc.nCtx, turn)
			}
		}
		reqs := srv.Requests()
		require.Len(t, reqs, 3)
		assert.Len(t, reqs[2].Messages, 5, "n_ctx %d: the whole conversation is sent", tc.nCtx)
	}
}
