package robby

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/robby-go/robby/robbytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPriceCost(t *testing.T) {
	cases := []struct {
		name  string
		price Price
		usage Usage
		want  float64
	}{
		{"prompt and completion", Price{Input: 2, Output: 8}, Usage{PromptTokens: 1000, CompletionTokens: 500}, 0.006},
		{"cached at its own price", Price{Input: 2.5, CachedInput: 1.25, Output: 10},
			Usage{PromptTokens: 2006, CompletionTokens: 300, CachedPromptTokens: 1920}, (86*2.5 + 1920*1.25 + 300*10) / 1e6},
		{"cached at Input's price", Price{Input: 2, Output: 8},
			Usage{PromptTokens: 1000, CompletionTokens: 500, CachedPromptTokens: 900}, 0.006},
		{"reasoning is completion", Price{Output: 10}, Usage{CompletionTokens: 1186, ReasoningTokens: 1024}, 0.01186},
		{"more cached than prompt", Price{Input: 1, CachedInput: 0.5}, Usage{PromptTokens: 10, CachedPromptTokens: 20}, 5 / 1e6},
		{"free", Price{}, Usage{PromptTokens: 1000, CompletionTokens: 500}, 0},
		{"own cost not read", Price{Input: 1}, Usage{PromptTokens: 1e6, Cost: 99}, 1},
	}
	for _, tc := range cases {
		assert.InDelta(t, tc.want, tc.price.Cost(tc.usage), 1e-12, tc.name)
	}
}

// TestCost checks that each model call's usage carries its cost: in the
// turns' events, the result, the conversation's total and what the model
// middleware sees.
func TestCost(t *testing.T) {
	price := Price{Input: 2, Output: 10}
	for _, stream := range []bool{false, true} {
		t.Run(faultMode(stream), func(t *testing.T) {
			srv := newServer(t)
			srv.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)).WithUsage(100, 10),
				robbytest.Text("3").WithUsage(200, 20))
			var seen []float64
			mw := func(ctx context.Context, req *ModelRequest, next ModelHandler) (*ModelResponse, error) {
				resp, err := next(ctx, req)
				if err == nil {
					seen = append(seen, resp.Usage.Cost)
				}
				return resp, err
			}
			a := newTestAgent(t, srv, WithTools(addTool), WithPrices(map[string]Price{"test-model": price}),
				WithModelMiddleware(mw))
			var turns []float64
			var res *Result
			if stream {
				for ev, err := range a.Stream(t.Context(), "1+2?") {
					require.NoError(t, err)
					if ev.Kind == EventTurnEnd {
						turns = append(turns, ev.Usage.Cost)
					}
					res = ev.Result
				}
				assert.InDeltaSlice(t, []float64{0.0003, 0.0006}, turns, 1e-12, "the turns' costs")
			} else {
				var err error
				res, err = a.Run(t.Context(), "1+2?")
				require.NoError(t, err)
			}
			assert.InDeltaSlice(t, []float64{0.0003, 0.0006}, seen, 1e-12, "the middleware's responses")
			assert.InDelta(t, 0.0009, res.Usage.Cost, 1e-12, "the run's cost")
			assert.InDelta(t, 0.0009, a.Usage().Cost, 1e-12, "the conversation's cost")
		})
	}
}

// TestCostOfFallback: the model that answered is the one priced.
func TestCostOfFallback(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(faultMode(stream), func(t *testing.T) {
			primary, second := newServer(t), newServer(t)
			primary.Reply(robbytest.Error(503, `{"error":{"message":"overloaded"}}`))
			second.Reply(robbytest.Text("from the fallback").WithUsage(1000, 100))
			a := newTestAgent(t, primary, WithFallback(Fallback{Model: "big", BaseURL: second.URL}),
				WithPrices(map[string]Price{"test-model": {Input: 1, Output: 1}, "big": {Input: 3, Output: 30}}))
			res, _, err := faultAsk(t.Context(), a, stream, "Hi")
			require.NoError(t, err)
			assert.Equal(t, []string{"big"}, res.Models)
			assert.InDelta(t, (1000*3+100*30)/1e6, res.Usage.Cost, 1e-12)
		})
	}
}

// TestCostOfAgentTool: an agent used as a tool prices its calls at its own
// prices, and they add to the run that called it.
func TestCostOfAgentTool(t *testing.T) {
	srv := newServer(t)
	researcher := newTestAgent(t, srv, WithPrices(map[string]Price{"test-model": {Input: 1}}))
	writer := newTestAgent(t, srv, WithTools(researcher.AsTool("research", "Finds facts")),
		WithPrices(map[string]Price{"test-model": {Input: 10}}))
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("research", `{"prompt":"How tall?"}`)).WithUsage(100, 0),
		robbytest.Text("8849 m").WithUsage(1000, 0), // the researcher's
		robbytest.Text("Everest is 8849 m tall.").WithUsage(200, 0),
	)
	res, err := writer.Run(t.Context(), "How tall is Everest?")
	require.NoError(t, err)
	assert.InDelta(t, (100*10+1000*1+200*10)/1e6, res.Usage.Cost, 1e-12)
	assert.InDelta(t, res.Usage.Cost, writer.Usage().Cost, 1e-12, "the conversation counts the researcher's calls too")
}

// A model without a price costs nothing, and the log says so, once.
func TestCostOfUnpricedModel(t *testing.T) {
	srv := newServer(t)
	var logs bytes.Buffer
	a := newTestAgent(t, srv, WithPrices(map[string]Price{"test-model": {Input: 1}}),
		WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	other := WithRunParams(openai.ChatCompletionNewParams{Model: "other"})
	for range 2 {
		srv.Reply(robbytest.Text("Hi").WithUsage(100, 10))
		res, err := a.Run(t.Context(), "Hello", other)
		require.NoError(t, err)
		assert.Zero(t, res.Usage.Cost)
	}
	assert.Equal(t, 1, strings.Count(logs.String(), `no price for the model (WithPrices): its calls count no cost" model=other`), logs.String())
}

func TestPricesInvalid(t *testing.T) {
	url := WithBaseURL("http://localhost:1/v1")
	cases := []struct {
		opts []Option
		want string
	}{
		{[]Option{WithPrices(map[string]Price{"m": {Input: -1}})}, `WithPrices: model "m": -1 is not a price`},
		{[]Option{WithPrices(map[string]Price{"m": {Output: math.NaN()}})}, `WithPrices: model "m": NaN is not a price`},
		{[]Option{WithPrices(map[string]Price{"m": {CachedInput: math.Inf(1)}})}, `WithPrices: model "m": +Inf is not a price`},
		{[]Option{WithPrices(map[string]Price{"": {}})}, "WithPrices: a price for an empty model name"},
		{[]Option{WithPrices(map[string]Price{"other": {}})}, `WithPrices: no price for model "m"`},
		{[]Option{WithPrices(map[string]Price{"m": {}}), WithFallback(Fallback{Model: "f"})}, `WithPrices: no price for model "f"`},
	}
	for _, tc := range cases {
		_, err := New(append([]Option{url, WithModel("m")}, tc.opts...)...)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
	prices := map[string]Price{"m": {}}
	a, err := New(url, WithModel("m"), WithPrices(prices), WithPrices(map[string]Price{"f": {Input: 1}}), WithFallback(Fallback{Model: "f"}))
	require.NoError(t, err, "a free model, and prices given twice")
	defer a.Close()
	prices["m"] = Price{Input: 5}
	assert.Equal(t, Price{}, a.core.prices["m"], "the agent keeps a copy")
}
