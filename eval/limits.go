package eval

import (
	"context"
	"fmt"
	"time"
)

// MaxTurns passes a run that made at most n model requests.
func MaxTurns(n int) Evaluator {
	return Func("max_turns", func(_ context.Context, out *Output) (Score, error) {
		got := out.Result.Turns
		return verdict(got <= n, fmt.Sprintf("%d turns, at most %d", got, n),
			fmt.Sprintf("%d turns, more than %d", got, n)), nil
	})
}

// MaxTokens passes a run that used at most n tokens, in and out.
func MaxTokens(n int64) Evaluator {
	return Func("max_tokens", func(_ context.Context, out *Output) (Score, error) {
		got := out.Result.Usage.TotalTokens
		return verdict(got <= n, fmt.Sprintf("%d tokens, at most %d", got, n),
			fmt.Sprintf("%d tokens, more than %d", got, n)), nil
	})
}

// MaxCost passes a run that cost at most c, at the agent's prices
// ([robby.WithPrices]).
func MaxCost(c float64) Evaluator {
	return Func("max_cost", func(_ context.Context, out *Output) (Score, error) {
		got := out.Result.Usage.Cost
		return verdict(got <= c, fmt.Sprintf("cost %g, at most %g", got, c),
			fmt.Sprintf("cost %g, more than %g", got, c)), nil
	})
}

// MaxDuration passes a run that took at most d.
func MaxDuration(d time.Duration) Evaluator {
	return Func("max_duration", func(_ context.Context, out *Output) (Score, error) {
		got := out.Duration.Round(time.Millisecond)
		return verdict(out.Duration <= d, fmt.Sprintf("took %v, at most %v", got, d),
			fmt.Sprintf("took %v, more than %v", got, d)), nil
	})
}
