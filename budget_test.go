package robby

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/robby-go/robby/robbytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// budgetPrice makes a reply of WithUsage(50, 10) cost 0.06.
var budgetPrice = map[string]Price{"test-model": {Input: 1000, Output: 1000}}

// TestBudgetLimits: each limit ends the run before the call that would go
// past it, plain and streamed. The partial result and the turns done are
// kept. The next run has a budget of its own.
func TestBudgetLimits(t *testing.T) {
	cases := []struct {
		limit  string
		budget Budget
		used   Budget
	}{
		{LimitModelCalls, Budget{ModelCalls: 2}, Budget{ModelCalls: 2, Tokens: 120, Cost: 0.12}},
		{LimitTokens, Budget{Tokens: 100}, Budget{ModelCalls: 2, Tokens: 120, Cost: 0.12}},
		{LimitCost, Budget{Cost: 0.1}, Budget{ModelCalls: 2, Tokens: 120, Cost: 0.12}},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(tc.limit+"/"+faultMode(stream), func(t *testing.T) {
				srv := newServer(t)
				call := robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)).WithUsage(50, 10)
				srv.Reply(call, call, call, robbytest.Text("3"))
				a := newTestAgent(t, srv, WithTools(addTool), WithBudget(tc.budget), WithPrices(budgetPrice))
				var turnEnds int
				var res *Result
				var err error
				if stream {
					for ev, e := range a.Stream(t.Context(), "Add.") {
						if ev.Kind == EventTurnEnd {
							turnEnds++
						}
						if ev.Kind == EventDone {
							res, err = ev.Result, e
						} else {
							require.NoError(t, e)
						}
					}
					assert.Equal(t, 2, turnEnds)
				} else {
					res, err = a.Run(t.Context(), "Add.")
				}
				require.ErrorIs(t, err, ErrBudget)
				var be *BudgetError
				require.ErrorAs(t, err, &be)
				assert.Equal(t, tc.limit, be.Limit)
				assert.Equal(t, tc.budget, be.Max)
				assert.Equal(t, tc.used.ModelCalls, be.Used.ModelCalls)
				assert.Equal(t, tc.used.Tokens, be.Used.Tokens)
				assert.InDelta(t, tc.used.Cost, be.Used.Cost, 1e-9)
				assert.Contains(t, err.Error(), "robby: budget reached: ")

				assert.Equal(t, 2, res.Turns, "the refused call is not a turn")
				assert.Len(t, res.ToolCalls, 2)
				assert.Len(t, res.Messages, 5, "the prompt and two whole turns")
				assert.Equal(t, int64(120), res.Usage.TotalTokens)
				assert.InDelta(t, 0.12, res.Usage.Cost, 1e-9)
				assert.Len(t, a.Messages(), 5)
				checkConsistent(t, a.Messages())
				assert.Len(t, srv.Requests(), 2, "nothing sent past the limit")

				srv.Reply(robbytest.Text("3"))
				res, err = a.Resume(t.Context())
				require.NoError(t, err, "a run has a budget of its own")
				assert.Equal(t, "3", res.Text)
			})
		}
	}
}

// A call that crosses a limit completes: a run whose model answered ends
// without error.
func TestBudgetAnswerOverLimit(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.Text("A long answer.").WithUsage(500, 500))
	a := newTestAgent(t, srv, WithBudget(Budget{Tokens: 100}))
	res, err := a.Run(t.Context(), "Hi")
	require.NoError(t, err)
	assert.Equal(t, "A long answer.", res.Text)
	assert.Equal(t, int64(1000), res.Usage.TotalTokens)
}

// The calls of an agent used as a tool count against the budget of the
// run that called it, and against its own.
func TestBudgetAgentTool(t *testing.T) {
	t.Run("the caller's budget", func(t *testing.T) {
		srv := newServer(t)
		researcher := newTestAgent(t, srv, WithTools(addTool))
		writer := newTestAgent(t, srv, WithTools(researcher.AsTool("research", "Finds facts")), WithBudget(Budget{ModelCalls: 2}))
		srv.Reply(
			robbytest.ToolCalls(robbytest.Call("research", `{"prompt":"1+2?"}`)),
			robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)), // the researcher's first call
			robbytest.Text("3"), // never asked
		)
		res, err := writer.Run(t.Context(), "What is 1+2?")
		var be *BudgetError
		require.ErrorAs(t, err, &be)
		assert.Equal(t, 2, be.Used.ModelCalls)
		require.Len(t, res.ToolCalls, 1)
		assert.ErrorIs(t, res.ToolCalls[0].Err, ErrBudget, "the researcher's run was stopped")
		assert.Equal(t, 1, srv.Pending())
	})
	t.Run("its own budget", func(t *testing.T) {
		srv := newServer(t)
		researcher := newTestAgent(t, srv, WithTools(addTool), WithBudget(Budget{ModelCalls: 1}))
		writer := newTestAgent(t, srv, WithTools(researcher.AsTool("research", "Finds facts")), WithBudget(Budget{ModelCalls: 3}))
		srv.Reply(
			robbytest.ToolCalls(robbytest.Call("research", `{"prompt":"1+2?"}`)),
			robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)),
			robbytest.Text("I could not find out."),
		)
		res, err := writer.Run(t.Context(), "What is 1+2?")
		require.NoError(t, err, "the writer's budget holds")
		assert.Equal(t, "I could not find out.", res.Text)
		require.Len(t, res.ToolCalls, 1)
		assert.ErrorIs(t, res.ToolCalls[0].Err, ErrBudget)
	})
	t.Run("concurrent calls", func(t *testing.T) {
		srv := newServer(t)
		researcher := newTestAgent(t, srv)
		writer := newTestAgent(t, srv, WithTools(researcher.AsTool("research", "Finds facts")), WithBudget(Budget{ModelCalls: 3}))
		ask := robbytest.Call("research", `{"prompt":"a fact"}`)
		srv.Reply(robbytest.ToolCalls(ask, ask, ask, ask))
		srv.Fallback(robbytest.Text("A fact."))
		res, err := writer.Run(t.Context(), "Find four facts.")
		require.ErrorIs(t, err, ErrBudget)
		assert.Len(t, srv.Requests(), 3, "the limit holds for concurrent calls")
		refused := 0
		for _, r := range res.ToolCalls {
			if errors.Is(r.Err, ErrBudget) {
				refused++
			}
		}
		assert.Equal(t, 2, refused)
	})
}

// A typed run's repairs share its budget.
func TestBudgetTyped(t *testing.T) {
	type answer struct {
		N int `json:"n"`
	}
	srv := newServer(t)
	srv.Reply(robbytest.Text(`{"n":"three"}`), robbytest.Text(`{"n":3}`))
	a := newTestAgent(t, srv, WithBudget(Budget{ModelCalls: 1}))
	_, res, err := RunTyped[answer](t.Context(), a, "1+2?", WithAnswerMode(AnswerPrompted))
	require.ErrorIs(t, err, ErrBudget)
	assert.Equal(t, 1, res.Turns)
	assert.Equal(t, 1, srv.Pending(), "the repair was not asked for")
}

// A Cost budget never counts a model without a price as free.
func TestBudgetCostNeedsPrices(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv, WithBudget(Budget{Cost: 1}), WithPrices(budgetPrice))
	_, err := a.Run(t.Context(), "Hi", WithRunParams(openai.ChatCompletionNewParams{Model: "other"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `model "other" has no price (WithPrices), and the run has a Cost budget`)
	assert.Empty(t, srv.Requests())

	_, err = New(WithBaseURL(srv.URL), WithModel("m"), WithBudget(Budget{Cost: 1}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WithBudget: a Cost limit needs the models' prices: use WithPrices")
}

func TestBudgetInvalid(t *testing.T) {
	for _, b := range []Budget{{ModelCalls: -1}, {Tokens: -1}, {Cost: -1}, {Cost: math.NaN()}, {Cost: math.Inf(1)}} {
		_, err := New(WithModel("m"), WithBudget(b))
		require.Error(t, err, "%+v", b)
		assert.Contains(t, err.Error(), "WithBudget: ")
	}
}

// TestBudgetOffAllocatesNothing checks the hooks a model call passes
// through on an agent without a budget.
func TestBudgetOffAllocatesNothing(t *testing.T) {
	c := &core{}
	ctx := context.Background()
	u := Usage{PromptTokens: 10}
	allocs := testing.AllocsPerRun(100, func() {
		ctx := c.metered(ctx, Budget{})
		m := meterOf(ctx)
		if m.start() != nil || c.checkPriced(ctx, "m") != nil {
			t.Fatal("no budget, no error")
		}
		m.spend(u)
		c.price(ctx, "m", &u)
	})
	if allocs != 0 {
		t.Errorf("the hooks allocate %v times without a budget or prices, want 0", allocs)
	}
}

// A run the budget stopped is named so in spans and the runs counter.
func TestBudgetTelemetryNames(t *testing.T) {
	err := error(&BudgetError{Limit: LimitTokens, Used: Budget{Tokens: 120}, Max: Budget{Tokens: 100}})
	assert.Equal(t, "budget", errorType(err))
	assert.Equal(t, "budget", runOutcome(new(Result), err))
	assert.EqualError(t, err, "robby: budget reached: 120 used of 100 tokens")
}
