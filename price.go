package robby

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
)

// A Price is what a model's tokens cost, per million, in a currency of the
// caller's choice (the one [Usage.Cost] and [Budget.Cost] are then in).
// Prices change and differ between providers: robby knows none of its own.
type Price struct {
	// Input is the price of a million prompt tokens.
	Input float64
	// CachedInput is the price of a million prompt tokens the provider
	// read from its prompt cache ([Usage.CachedPromptTokens]); 0 means
	// Input's.
	CachedInput float64
	// Output is the price of a million completion tokens, reasoning
	// tokens included.
	Output float64
}

// Cost returns what the tokens of u cost at p: the prompt tokens not
// cached at Input, the cached ones at CachedInput, the completion tokens
// at Output. u's own Cost is not read. A negative count costs nothing,
// and the cost saturates at the largest finite float64.
func (p Price) Cost(u Usage) float64 {
	prompt, completion := max(u.PromptTokens, 0), max(u.CompletionTokens, 0)
	cached := max(0, min(u.CachedPromptTokens, prompt))
	cost := (float64(prompt-cached)*p.Input + float64(cached)*cmp.Or(p.CachedInput, p.Input) +
		float64(completion)*p.Output) / 1e6
	return min(cost, math.MaxFloat64)
}

// WithPrices gives the price of each model, by the name robby asks for it
// ([WithModel], [WithRunParams], a [Fallback]'s, or the one a
// [ModelMiddleware] sets), so that each model call's [Usage] carries its
// Cost: in [EventTurnEnd], [Result.Usage], [Agent.Usage], a [Compaction]'s
// summary and a [ModelResponse]. The model that answered is the one
// priced: a fallback's call costs the fallback's price.
//
// The agent's model and its fallbacks must each have a price, or [New]
// fails: give a free model the zero Price. A call to another model
// without a price (one a run or a middleware asked for) costs 0, and the
// agent's logger warns of it once per model; a run with a cost limit
// ([WithBudget]) does not send it. Without WithPrices, every Cost is 0.
// Given again, it adds to the prices, replacing those of models named
// again.
func WithPrices(prices map[string]Price) Option {
	return func(c *config) error {
		for model, p := range prices {
			if model == "" {
				return errors.New("WithPrices: a price for an empty model name")
			}
			for _, v := range [...]float64{p.Input, p.CachedInput, p.Output} {
				if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
					return fmt.Errorf("WithPrices: model %q: %v is not a price", model, v)
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
			return fmt.Errorf("WithPrices: no price for model %q (give a free model the zero Price)", m)
		}
	}
	return nil
}

// price sets u.Cost to what model's call cost, u clamped first. A model
// without a price costs 0, which the log says once per model.
func (c *core) price(ctx context.Context, model string, u *Usage) {
	c.clampUsage(ctx, model, u)
	if c.prices == nil {
		return
	}
	p, ok := c.prices[model]
	if !ok {
		if _, warned := c.unpriced.LoadOrStore(model, true); !warned {
			c.log.WarnContext(ctx, "robby: no price for the model (WithPrices): its calls count no cost", slog.String("model", model))
		}
		return
	}
	u.Cost = min(p.Cost(*u), maxCallCost)
}

// clampUsage keeps a call's usage, read from the wire or set by a model
// middleware, within what a call can use ([Usage.clamped]): the
// provider's numbers inform, and must not break the sums, the stores or
// the budget. The log warns of it once in the agent's life.
func (c *core) clampUsage(ctx context.Context, model string, u *Usage) {
	clamped, changed := u.clamped()
	if !changed {
		return
	}
	if c.usageWarned.CompareAndSwap(false, true) {
		c.log.WarnContext(ctx, "robby: a usage no model call has (negative, not a number, or beyond bounds) was clamped",
			slog.String("model", model), slog.Any("usage", *u))
	}
	*u = clamped
}
