package convstore

import (
	"fmt"
	"math"
)

// UsageColumns are the columns that keep a robby.Usage, in the order of
// [Usage.Args] and [Usage.Dest]. A conversation keeps its total there. A
// message keeps the usage of the calls that wrote it.
const UsageColumns = `prompt_tokens, completion_tokens, total_tokens, cached_prompt_tokens, reasoning_tokens, cost`

// Usage has robby.Usage's fields. A store converts one to the other:
// convstore.Usage(u) or (*convstore.Usage)(&u). The compiler keeps the
// two alike.
type Usage struct {
	PromptTokens       int64
	CompletionTokens   int64
	TotalTokens        int64
	CachedPromptTokens int64
	ReasoningTokens    int64
	Cost               float64
}

// Args returns u's fields as query arguments, in UsageColumns' order.
func (u Usage) Args() []any {
	return []any{u.PromptTokens, u.CompletionTokens, u.TotalTokens, u.CachedPromptTokens, u.ReasoningTokens, u.Cost}
}

// Dest returns where to scan UsageColumns into u.
func (u *Usage) Dest() []any {
	return []any{&u.PromptTokens, &u.CompletionTokens, &u.TotalTokens, &u.CachedPromptTokens, &u.ReasoningTokens, &u.Cost}
}

// check reports a usage no model call reports: a negative count or cost,
// or a cost that is not a number.
func (u Usage) check() error {
	if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.TotalTokens < 0 || u.CachedPromptTokens < 0 ||
		u.ReasoningTokens < 0 || !(u.Cost >= 0) || math.IsInf(u.Cost, 1) {
		return fmt.Errorf("a negative or not finite usage: %+v", u)
	}
	return nil
}

// SumUsage returns the usage of msgs together. U's Add sums it; robby's
// saturates.
func SumUsage[M any, U interface{ Add(U) U }](msgs []M, usage func(M) U) U {
	var sum U
	for _, m := range msgs {
		sum = sum.Add(usage(m))
	}
	return sum
}
