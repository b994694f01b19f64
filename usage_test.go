package robby

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"testing"

	"github.com/robby-go/robby/robbytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// usageCases are the usage objects providers send, as they send them, with
// what robby reads of each.
var usageCases = []struct {
	name    string
	usage   string // the usage object, and the members beside it
	timings string // llama.cpp's timings object, if any
	want    Usage
}{{
	name:  "OpenAI prompt cache",
	usage: `{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`,
	want:  Usage{PromptTokens: 2006, CompletionTokens: 300, TotalTokens: 2306, CachedPromptTokens: 1920},
}, {
	name:  "OpenAI reasoning model",
	usage: `{"prompt_tokens":75,"completion_tokens":1186,"total_tokens":1261,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":1024,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`,
	want:  Usage{PromptTokens: 75, CompletionTokens: 1186, TotalTokens: 1261, ReasoningTokens: 1024},
}, {
	name:  "vLLM prefix cache",
	usage: `{"prompt_tokens":512,"total_tokens":576,"completion_tokens":64,"prompt_tokens_details":{"cached_tokens":496}}`,
	want:  Usage{PromptTokens: 512, CompletionTokens: 64, TotalTokens: 576, CachedPromptTokens: 496},
}, {
	name:  "DeepSeek",
	usage: `{"prompt_tokens":1294,"completion_tokens":118,"total_tokens":1412,"prompt_tokens_details":{"cached_tokens":1280},"prompt_cache_hit_tokens":1280,"prompt_cache_miss_tokens":14}`,
	want:  Usage{PromptTokens: 1294, CompletionTokens: 118, TotalTokens: 1412, CachedPromptTokens: 1280},
}, {
	name:  "DeepSeek without prompt_tokens_details",
	usage: `{"prompt_tokens":1294,"completion_tokens":118,"total_tokens":1412,"prompt_cache_hit_tokens":1280,"prompt_cache_miss_tokens":14}`,
	want:  Usage{PromptTokens: 1294, CompletionTokens: 118, TotalTokens: 1412, CachedPromptTokens: 1280},
}, {
	name:  "DeepSeek reasoner",
	usage: `{"prompt_tokens":14,"completion_tokens":61,"total_tokens":75,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":49},"prompt_cache_hit_tokens":0,"prompt_cache_miss_tokens":14}`,
	want:  Usage{PromptTokens: 14, CompletionTokens: 61, TotalTokens: 75, ReasoningTokens: 49},
}, {
	name:    "llama.cpp",
	usage:   `{"completion_tokens":57,"prompt_tokens":212,"total_tokens":269}`,
	timings: `{"cache_n":200,"prompt_n":12,"prompt_ms":11.442,"prompt_per_token_ms":0.9535,"prompt_per_second":1048.76,"predicted_n":57,"predicted_ms":1254.9,"predicted_per_token_ms":22.015789,"predicted_per_second":45.42}`,
	want:    Usage{PromptTokens: 212, CompletionTokens: 57, TotalTokens: 269, CachedPromptTokens: 200},
}, {
	name:  "Gemini thinking, reasoning counted apart",
	usage: `{"completion_tokens":40,"prompt_tokens":2104,"total_tokens":2500,"prompt_tokens_details":{"cached_tokens":2048},"completion_tokens_details":{"reasoning_tokens":356}}`,
	want:  Usage{PromptTokens: 2104, CompletionTokens: 396, TotalTokens: 2500, CachedPromptTokens: 2048, ReasoningTokens: 356},
}, {
	name:  "Ollama",
	usage: `{"prompt_tokens":152,"completion_tokens":24,"total_tokens":176}`,
	want:  Usage{PromptTokens: 152, CompletionTokens: 24, TotalTokens: 176},
}, {
	name:  "hostile: beyond int64, a fraction, a string, negative",
	usage: `{"prompt_tokens":99999999999999999999,"completion_tokens":1.5,"total_tokens":"many","prompt_tokens_details":{"cached_tokens":-7}}`,
	want:  Usage{PromptTokens: maxCallTokens, CompletionTokens: 1},
}}

// usagePrice prices the model of TestUsageDetails.
var usagePrice = Price{Input: 3, CachedInput: 0.75, Output: 15}

// TestUsageDetails checks what robby reads of each provider's usage, in a
// plain response and at the end of a stream, in the turn's event, the
// result and the conversation's total, each with its cost.
func TestUsageDetails(t *testing.T) {
	for _, tc := range usageCases {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				srv := newServer(t)
				timings := ""
				if tc.timings != "" {
					timings = `,"timings":` + tc.timings
				}
				if stream {
					srv.Reply(robbytest.SSE(
						`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi."},"finish_reason":null}]}` + "\n\n" +
							`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}` + "\n\n" +
							`data: {"choices":[],"usage":` + tc.usage + timings + "}\n\n" +
							"data: [DONE]\n\n"))
				} else {
					srv.Reply(robbytest.Handler(func(w http.ResponseWriter, _ *http.Request) {
						w.Header().Set("Content-Type", "application/json")
						io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi."},"finish_reason":"stop"}],"usage":`+tc.usage+timings+`}`)
					}))
				}
				srv.Reply(robbytest.Text("Again.").WithUsage(10, 2))
				a := newTestAgent(t, srv, WithPrices(map[string]Price{"test-model": usagePrice}))
				want := tc.want
				want.Cost = usagePrice.Cost(want)
				var res *Result
				var turn Usage
				if stream {
					for ev, err := range a.Stream(t.Context(), "Hello") {
						require.NoError(t, err)
						if ev.Kind == EventTurnEnd {
							turn = *ev.Usage
						}
						res = ev.Result
					}
				} else {
					var err error
					res, err = a.Run(t.Context(), "Hello")
					require.NoError(t, err)
					turn = res.Usage
				}
				assert.Equal(t, "Hi.", res.Text)
				assert.Equal(t, want, turn, "the turn's usage")
				assert.Equal(t, want, res.Usage, "the run's usage")
				assert.Equal(t, want, a.Usage(), "the conversation's usage")

				_, err := a.Run(t.Context(), "Again")
				require.NoError(t, err)
				total, again := want, Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}
				again.Cost = usagePrice.Cost(again)
				total.add(again)
				assert.Equal(t, total, a.Usage(), "the conversation's usage sums its runs")
				assert.Equal(t, Usage{}, a.Clone().Usage(), "a clone starts from zero")
				a.Reset()
				assert.Equal(t, Usage{}, a.Usage(), "Reset starts from zero")
			})
		}
	}
}

// TestUsageHostile: a usage no model call has (negative, or beyond any
// count) is clamped as it is read: the run's and the conversation's sums
// stay true, and the budget's token and cost limits hold.
func TestUsageHostile(t *testing.T) {
	cases := []struct {
		name               string
		prompt, completion int
		calls              int // the calls made before a limit is reached
	}{
		{"negative", -1_000_000, -5, 3},
		{"overflowing", math.MaxInt64, 1, 1},
	}
	for _, tc := range cases {
		for _, limit := range []Budget{{Tokens: 100}, {Cost: 0.1}} {
			t.Run(fmt.Sprintf("%s/%+v", tc.name, limit), func(t *testing.T) {
				srv := newServer(t)
				call := robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`))
				srv.Reply(call.WithUsage(tc.prompt, tc.completion), call.WithUsage(50, 10),
					call.WithUsage(50, 10), robbytest.Text("3"))
				a := newTestAgent(t, srv, WithTools(addTool), WithBudget(limit), WithPrices(budgetPrice))
				res, err := a.Run(t.Context(), "Add.")
				require.ErrorIs(t, err, ErrBudget)
				assert.Equal(t, tc.calls, len(srv.Requests()), "the limit held")
				for _, u := range []Usage{res.Usage, a.Usage()} {
					for _, n := range []int64{u.PromptTokens, u.CompletionTokens, u.TotalTokens} {
						assert.True(t, n >= 0 && n <= maxCallTokens*int64(tc.calls), "%+v", u)
					}
					assert.True(t, u.Cost >= 0 && !math.IsInf(u.Cost, 0), "%+v", u)
				}
			})
		}
	}
}

// TestUsageAddSaturates: sums stop at the bounds rather than wrap.
func TestUsageAddSaturates(t *testing.T) {
	big := Usage{PromptTokens: math.MaxInt64, CompletionTokens: math.MinInt64, Cost: math.MaxFloat64}
	sum := big.Add(Usage{PromptTokens: 1, CompletionTokens: -1, Cost: math.MaxFloat64})
	assert.Equal(t, Usage{PromptTokens: math.MaxInt64, CompletionTokens: math.MinInt64, Cost: math.MaxFloat64}, sum)
	assert.Equal(t, Usage{PromptTokens: 3, Cost: 0.5}, Usage{PromptTokens: 1, Cost: 0.25}.Add(Usage{PromptTokens: 2, Cost: 0.25}))
	assert.Equal(t, 0.0, Price{Input: 1}.Cost(Usage{PromptTokens: -5}), "a negative count costs nothing")
	assert.Equal(t, math.MaxFloat64, Price{Input: math.MaxFloat64}.Cost(Usage{PromptTokens: maxCallTokens}))
}
