package robby

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
)

// A Budget bounds what one run may spend on model calls. A zero limit is
// no limit. See [WithBudget].
type Budget struct {
	// ModelCalls bounds the model calls the run makes, answered or not.
	ModelCalls int
	// Tokens bounds the tokens the calls use: their total as the provider
	// reports it, or prompt plus completion if that is more.
	Tokens int64
	// Cost bounds what the calls cost, at the prices of [WithPrices], in
	// their currency.
	Cost float64
}

// WithBudget bounds what each run spends on model calls: each run of
// [Agent.Run], [Agent.Stream], [Agent.Resume], [Agent.ResumeStream],
// [RunTyped] (its repairs included) and [StreamTyped], and of the agent
// used as a tool. Like [WithMaxTurns], it is the agent's, and its clones':
// agents with other budgets are other agents.
//
// A run counts every model call it makes: its turns, the summaries of
// [WithCompaction], and the calls of the agents its tools run
// ([Agent.AsTool], [AgentTool]), which count against their own budget, if
// they have one, and against the run's. The budget is checked before each
// call: a run that reached a limit sends no more, and ends with the
// partial [Result], the turns done kept in the conversation, and a
// [*BudgetError], as [ErrMaxTurns] ends a run. A call is not cut short:
// the one that crosses a limit completes, and its tool calls run, so a
// run may end a call's worth over its Tokens or Cost; a run whose model
// answered ends without error, whatever it spent.
//
// A Cost limit needs the price of every model the run asks
// ([WithPrices]): [New] fails without prices, and a call to a model with
// none (asked by [WithRunParams] or a [ModelMiddleware]) is not sent, its
// error ending the run. The building blocks ([Agent.ChatCompletion] and
// the others) are not runs: no budget bounds them.
func WithBudget(b Budget) Option {
	return func(c *config) error {
		if b.ModelCalls < 0 || b.Tokens < 0 || b.Cost < 0 || math.IsNaN(b.Cost) || math.IsInf(b.Cost, 0) {
			return fmt.Errorf("WithBudget: %+v has a limit that is negative or not a number", b)
		}
		c.budget = b
		return nil
	}
}

// checkBudget makes sure a cost limit has prices to count with.
func checkBudget(cfg *config) error {
	if cfg.budget.Cost > 0 && cfg.prices == nil {
		return errors.New("WithBudget: a Cost limit needs the models' prices: use WithPrices")
	}
	return nil
}

// Limits of a [Budget], as a [BudgetError] names them.
const (
	LimitModelCalls = "model calls"
	LimitTokens     = "tokens"
	LimitCost       = "cost"
)

// A BudgetError ends a run that reached a limit of its [Budget]
// ([WithBudget]), or of the budget of the run whose tool runs it. It
// matches [ErrBudget] with errors.Is.
type BudgetError struct {
	// Limit is the limit reached: [LimitModelCalls], [LimitTokens] or
	// [LimitCost].
	Limit string
	// Used is what the run that has the budget had spent when it
	// stopped, and Max its budget.
	Used, Max Budget
}

// Error says the limit reached and what was spent.
func (e *BudgetError) Error() string {
	var used, limit string
	switch e.Limit {
	case LimitModelCalls:
		used, limit = fmt.Sprint(e.Used.ModelCalls), fmt.Sprint(e.Max.ModelCalls)
	case LimitTokens:
		used, limit = fmt.Sprint(e.Used.Tokens), fmt.Sprint(e.Max.Tokens)
	default:
		used, limit = fmt.Sprintf("%.6g", e.Used.Cost), fmt.Sprintf("%.6g", e.Max.Cost)
	}
	return fmt.Sprintf("%v: %s used of %s %s", ErrBudget, used, limit, e.Limit)
}

// Is reports whether target is [ErrBudget].
func (e *BudgetError) Is(target error) bool { return target == ErrBudget }

// A meter counts what a run with a budget spends. The runs of agents used
// as its tools count in it too, concurrently: a run's meter has the meter
// of the run that called it, if any, as its parent.
type meter struct {
	parent *meter
	max    Budget

	mu   sync.Mutex
	used Budget
}

type meterKey struct{}

// metered returns ctx with a meter for a run of the agent that spent
// spent before ([WithOneTurn]), or ctx as it is when the agent has no
// budget: the run counts in its caller's meter, if any.
func (c *core) metered(ctx context.Context, spent Budget) context.Context {
	if c.runBudget == (Budget{}) {
		return ctx
	}
	return context.WithValue(ctx, meterKey{}, &meter{parent: meterOf(ctx), max: c.runBudget, used: spent})
}

// meterOf returns the meter of the run ctx is of, nil if none.
func meterOf(ctx context.Context) *meter {
	m, _ := ctx.Value(meterKey{}).(*meter)
	return m
}

// start counts a model call about to be made, in m and its parents, or
// returns the error of the first whose budget is reached. They are held
// together, child before parent, so that concurrent calls never make more
// than ModelCalls.
func (m *meter) start() error {
	for b := m; b != nil; b = b.parent {
		b.mu.Lock()
		defer b.mu.Unlock()
	}
	for b := m; b != nil; b = b.parent {
		if err := b.reached(); err != nil {
			return err
		}
	}
	for b := m; b != nil; b = b.parent {
		b.used.ModelCalls++
	}
	return nil
}

// reached returns the error of the first limit of m's budget reached.
func (m *meter) reached() error {
	used, max := m.used, m.max
	var limit string
	switch {
	case max.ModelCalls > 0 && used.ModelCalls >= max.ModelCalls:
		limit = LimitModelCalls
	case max.Tokens > 0 && used.Tokens >= max.Tokens:
		limit = LimitTokens
	case max.Cost > 0 && used.Cost >= max.Cost:
		limit = LimitCost
	default:
		return nil
	}
	return &BudgetError{Limit: limit, Used: used, Max: max}
}

// spend counts the tokens and cost of an answered call in m and its
// parents.
func (m *meter) spend(u Usage) {
	tokens := max(u.TotalTokens, addTokens(u.PromptTokens, u.CompletionTokens), 0)
	for b := m; b != nil; b = b.parent {
		b.mu.Lock()
		b.used.Tokens = addTokens(b.used.Tokens, tokens)
		b.used.Cost = addCost(b.used.Cost, max(u.Cost, 0))
		b.mu.Unlock()
	}
}

// checkPriced returns an error when model has no price while a meter of
// ctx bounds the cost.
func (c *core) checkPriced(ctx context.Context, model string) error {
	m := meterOf(ctx)
	if m == nil {
		return nil
	}
	if _, ok := c.prices[model]; ok {
		return nil
	}
	for b := m; b != nil; b = b.parent {
		if b.max.Cost > 0 {
			return fmt.Errorf("robby: model %q has no price (WithPrices), and the run has a Cost budget", model)
		}
	}
	return nil
}
