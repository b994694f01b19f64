package robby

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"sync"
)

// A Budget bounds what one run may spend on model calls. A zero limit is
// no limit. See [WithBudget].
type Budget struct {
	// ModelCalls bounds the model calls the run makes, answered or not.
	ModelCalls int
	// Tokens bounds the tokens the calls use. That is their total as the
	// provider reports it, or prompt plus completion if that is more.
	Tokens int64
	// Cost bounds what the calls cost, at the prices of [WithPrices], in
	// their currency.
	Cost float64
}

// WithBudget bounds what each run spends on model calls. That is each run of
// [Agent.Run], [Agent.Stream], [Agent.Resume], [Agent.ResumeStream],
// [RunTyped] (its repairs included) and [StreamTyped], and of the agent used
// as a tool. Like [WithMaxTurns], it is the agent's, and its clones'. Agents
// with other budgets are other agents.
//
// A run counts every model call it makes: its turns and the summaries of
// [WithCompaction]. It also counts the calls of the agents its tools run
// ([Agent.AsTool], [AgentTool]). Those count against their own budget, if
// they have one, and against the run's. The budget is checked before each
// call. A run that reached a limit sends no more. It ends as [ErrMaxTurns]
// ends a run: with the partial [Result], the turns done kept in the
// conversation, and a [*BudgetError]. A call is not cut short. The one that
// crosses a limit completes, and its tool calls run. So a run may end a
// call's worth over its Tokens or Cost. A run whose model answered ends
// without error, whatever it spent.
//
// A Cost limit needs the price of every model the run asks ([WithPrices]).
// [New] fails without prices. A call to a model with none (asked by
// [WithRunParams] or a [ModelMiddleware]) is not sent, and its error ends the
// run. The building blocks ([Agent.ChatCompletion] and the others) are not
// runs: no budget bounds them.
func WithBudget(b Budget) Option {
	return func(c *config) error {
		if b.ModelCalls < 0 || b.Tokens < 0 || b.Cost < 0 || math.IsNaN(b.Cost) || math.IsInf(b.Cost, 0) {
			return fmt.Errorf("robby: WithBudget: %+v has a limit that is negative or not a number", b)
		}
		c.budget = b
		return nil
	}
}

// checkBudget makes sure a cost limit has prices to count with.
func checkBudget(cfg *config) error {
	if cfg.budget.Cost > 0 && cfg.prices == nil {
		return errors.New("robby: WithBudget: a Cost limit needs the models' prices: use WithPrices")
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
// ([WithBudget]). It also ends the run of an agent used as a tool when the
// calling run reaches a limit. It matches [ErrBudget] with errors.Is.
type BudgetError struct {
	// Limit is the limit reached: [LimitModelCalls], [LimitTokens] or
	// [LimitCost].
	Limit string
	// Used is what the run that has the budget had spent when it stopped. Max
	// is its budget.
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

// A meter counts what a run with a budget spends. The runs of agents used as
// its tools count in it too, concurrently. A run's meter has the meter of the
// run that called it, if any, as its parent.
type meter struct {
	parent *meter
	max    Budget

	mu   sync.Mutex
	used Budget
}

type meterKey struct{}

// meterOf returns the meter of the run ctx is of, nil if none.
func meterOf(ctx context.Context) *meter {
	m, _ := ctx.Value(meterKey{}).(*meter)
	return m
}

// start counts a model call about to be made, in m and its parents. It
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

// A Price is what a model's tokens cost, per million. The currency is the
// caller's choice, and [Usage.Cost] and [Budget.Cost] are then in it. Prices
// change and differ between providers: robby knows none of its own.
type Price struct {
	// Input is the price of a million prompt tokens.
	Input float64
	// CachedInput is the price of a million prompt tokens the provider read
	// from its prompt cache ([Usage.CachedPromptTokens]). 0 means Input's.
	CachedInput float64
	// Output is the price of a million completion tokens, reasoning
	// tokens included.
	Output float64
}

// Cost returns what the tokens of u cost at p. Prompt tokens not cached cost
// Input, cached ones CachedInput, completion tokens Output. u's own Cost is
// not read. A negative count costs nothing, and the cost saturates at the
// largest finite float64.
func (p Price) Cost(u Usage) float64 {
	prompt, completion := max(u.PromptTokens, 0), max(u.CompletionTokens, 0)
	cached := max(0, min(u.CachedPromptTokens, prompt))
	cost := (float64(prompt-cached)*p.Input + float64(cached)*cmp.Or(p.CachedInput, p.Input) +
		float64(completion)*p.Output) / 1e6
	return min(cost, math.MaxFloat64)
}

// WithPrices gives the price of each model, by the name robby asks for it.
// That name comes from [WithModel], [WithRunParams], a [Fallback], or a
// [ModelMiddleware]. Each model call's [Usage] then carries its Cost. It
// shows in [EventTurnEnd], [Result.Usage], [Agent.Usage], a [Compaction]'s
// summary and a [ModelResponse]. The model that answered is the one priced: a
// fallback's call costs the fallback's price.
//
// The agent's model and its fallbacks must each have a price, or [New] fails.
// Give a free model the zero Price. A run or a middleware may ask for another
// model. If that model has no price, its call costs 0, and the agent's logger
// warns of it once per model. A run with a cost limit ([WithBudget]) does not
// send such a call. Without WithPrices, every Cost is 0. Given again, it adds
// to the prices, replacing those of models named again.
func WithPrices(prices map[string]Price) Option {
	return func(c *config) error {
		for model, p := range prices {
			if model == "" {
				return errors.New("robby: WithPrices: a price for an empty model name")
			}
			for _, v := range [...]float64{p.Input, p.CachedInput, p.Output} {
				if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
					return fmt.Errorf("robby: WithPrices: model %q: %v is not a price", model, v)
				}
			}
		}
		if c.prices == nil {
			c.prices = make(map[string]Price, len(prices))
		}
		maps.Copy(c.prices, prices)
		return nil
	}
}

// checkPrices makes sure that, when prices are given, the agent's model
// and its fallbacks have one.
func checkPrices(cfg *config) error {
	if cfg.prices == nil {
		return nil
	}
	models := []string{cfg.params.Model}
	for _, f := range cfg.fallbacks {
		models = append(models, f.Model)
	}
	for _, m := range models {
		if _, ok := cfg.prices[m]; !ok {
			return fmt.Errorf("robby: WithPrices: no price for model %q (give a free model the zero Price)", m)
		}
	}
	return nil
}

// spent returns what m counted so far.
func (m *meter) spent() Budget {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}
