package robby

import (
	"math"

	"github.com/openai/openai-go/v3"
)

// A Result is what a run did.
type Result struct {
	// Text is the model's last answer. After an error, it is the text
	// received before it.
	Text string
	// Reasoning is the reasoning the model showed before that answer, for
	// providers that send it.
	Reasoning string
	// Messages are what the run added to the conversation: the prompt,
	// the assistant's messages and the tool results.
	Messages []openai.ChatCompletionMessageParamUnion
	// Turns counts the model requests.
	Turns int
	// Models are the models that answered, one for each turn that got an
	// answer. Each is the agent's, the run's ([WithRunParams]), a
	// [Fallback] that took over ([WithFallback]), or the model a
	// [ModelMiddleware] said answered.
	Models []string
	// ToolCalls are the tool calls of every turn, in order.
	ToolCalls []ToolResult
	// Usage sums the tokens of every turn, as the provider reported them.
	// It includes the agents the run's tools ran ([Agent.AsTool]).
	Usage Usage
	// Pending are the calls of caller-run tools ([WithCallerTools]) the run
	// ended on, in the order the model made them. The conversation holds
	// them, awaiting their results. Give those with [WithToolResults] to
	// [Agent.Resume], or to the next [Agent.Run] before its prompt.
	Pending []ToolCall
	// Agent names the agent that answered, or ended the run: the one
	// that holds a team's conversation now ([WithTeam]). It is empty for
	// an agent without a name ([WithName]).
	Agent string
	// Handoffs are the handoffs of the run, in order ([WithHandoffs]).
	Handoffs []Transfer
	// Agents names, for each of Messages, the agent of a team that wrote
	// it or took it in, as a store keeps it ([Message].Agent). It is nil
	// for the run of an agent that is not a team's root ([WithTeam]).
	Agents []string
}

// Usage counts the tokens of model calls, as the provider reported them,
// and their cost ([WithPrices]). An [EventTurnEnd] holds one turn's,
// [Result.Usage] a run's, and [Agent.Usage] a conversation's.
//
// Providers name the details differently. Robby reads OpenAI's, vLLM's
// and Gemini's prompt_tokens_details and completion_tokens_details,
// DeepSeek's prompt_cache_hit_tokens and llama.cpp's timings. A detail the
// provider does not report is 0. A provider's numbers are untrusted. Each
// call's counts are kept within 0 and 2^40, its cost within 0 and 10^15.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	TotalTokens      int64
	// CachedPromptTokens are the prompt tokens the provider read from its
	// prompt cache, counted in PromptTokens too.
	CachedPromptTokens int64
	// ReasoningTokens are the completion tokens the model spent reasoning,
	// counted in CompletionTokens too.
	ReasoningTokens int64
	// Cost is what the calls cost at the prices given with [WithPrices],
	// in their currency. It is 0 without prices, and for the calls of a
	// model that has none.
	Cost float64
}

// Add returns u and v summed, field by field: the usage of the calls of
// both. A sum saturates rather than wrap. A count stops at the largest
// int64 (or the smallest), a cost at the largest finite float64.
func (u Usage) Add(v Usage) Usage {
	u.PromptTokens = addTokens(u.PromptTokens, v.PromptTokens)
	u.CompletionTokens = addTokens(u.CompletionTokens, v.CompletionTokens)
	u.TotalTokens = addTokens(u.TotalTokens, v.TotalTokens)
	u.CachedPromptTokens = addTokens(u.CachedPromptTokens, v.CachedPromptTokens)
	u.ReasoningTokens = addTokens(u.ReasoningTokens, v.ReasoningTokens)
	u.Cost = addCost(u.Cost, v.Cost)
	return u
}

func (u *Usage) add(v Usage) { *u = u.Add(v) }

// addTokens returns a+b, saturated at the bounds of int64.
func addTokens(a, b int64) int64 {
	s := a + b
	if (s > a) != (b > 0) { // wrapped
		if b > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return s
}

// addCost returns a+b, saturated at the largest finite float64.
func addCost(a, b float64) float64 {
	return max(-math.MaxFloat64, min(a+b, math.MaxFloat64))
}

// The bounds of one model call's usage as robby reads it. No provider
// reports more; beyond them a count or cost would only overflow the sums.
const (
	maxCallTokens = 1 << 40 // a thousand billion tokens
	maxCallCost   = 1e15
)

// clamped returns u within what one model call can use. A negative count
// or cost becomes 0, one beyond the bounds above the bound. A cost that is
// not a number becomes 0. It reports whether it changed anything.
func (u Usage) clamped() (Usage, bool) {
	c := u
	for _, n := range [...]*int64{&c.PromptTokens, &c.CompletionTokens, &c.TotalTokens, &c.CachedPromptTokens, &c.ReasoningTokens} {
		*n = max(0, min(*n, maxCallTokens))
	}
	if math.IsNaN(c.Cost) {
		c.Cost = 0
	}
	c.Cost = max(0, min(c.Cost, maxCallCost))
	return c, c != u
}
