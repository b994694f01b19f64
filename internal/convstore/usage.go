package convstore

import (
	"fmt"
	"math"

	"github.com/robby-go/robby"
)

// UsageColumns are the columns that keep a robby.Usage, in the order of
// UsageArgs and UsageDest. The conversations keep their total in them, and the
// messages the usage of the model calls that wrote each.
const UsageColumns = `prompt_tokens, completion_tokens, total_tokens, cached_prompt_tokens, reasoning_tokens, cost`

// UsageArgs returns u's fields as query arguments, in UsageColumns' order.
func UsageArgs(u robby.Usage) []any {
	return []any{u.PromptTokens, u.CompletionTokens, u.TotalTokens, u.CachedPromptTokens, u.ReasoningTokens, u.Cost}
}

// UsageDest returns where to scan UsageColumns into u.
func UsageDest(u *robby.Usage) []any {
	return []any{&u.PromptTokens, &u.CompletionTokens, &u.TotalTokens, &u.CachedPromptTokens, &u.ReasoningTokens, &u.Cost}
}

// SumUsage returns the usage of msgs together.
func SumUsage(msgs []robby.Message) robby.Usage {
	var sum robby.Usage
	for _, m := range msgs {
		sum = sum.Add(m.Usage)
	}
	return sum
}

// checkUsage reports a usage no model call reports: a negative count or
// cost, or a cost that is not a number.
func checkUsage(u robby.Usage) error {
	if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.TotalTokens < 0 || u.CachedPromptTokens < 0 ||
		u.ReasoningTokens < 0 || !(u.Cost >= 0) || math.IsInf(u.Cost, 1) {
		return fmt.Errorf("a negative or not finite usage: %+v", u)
	}
	return nil
}
