package robby

import (
	"github.com/openai/openai-go/v3"
)

// A Result is what a run did.
type Result struct {
	// Text is the model's last answer; after an error, the text received
	// before it.
	Text string
	// Reasoning is the reasoning the model showed before that answer, for
	// providers that send it.
	Reasoning string
	// Messages are the messages the run added to the conversation: the
	// prompt, the assistant's messages and the tool results.
	Messages []openai.ChatCompletionMessageParamUnion
	// Turns counts the model requests.
	Turns int
	// Models are the models that answered, one for each turn that got
	// an answer: the agent's, the run's ([WithRunParams]), or a
	// [Fallback] that took over ([WithFallback]), or the model a
	// [ModelMiddleware] said answered.
	Models []string
	// ToolCalls are the tool calls of every turn, in order.
	ToolCalls []ToolResult
	// Usage sums the tokens of every turn, as the provider reported them,
	// those of the agents the run's tools ran ([Agent.AsTool]) included.
	Usage Usage
	// Pending are the calls of caller-run tools ([WithCallerTools]) the run
	// ended on, in the order the model made them. The conversation holds
	// them, awaiting their results: give those with [WithToolResults] to
	// [Agent.Resume] (or to the next [Agent.Run], before its prompt).
	Pending []ToolCall
}

// Usage counts the tokens of model calls, as the provider reported them,
// and their cost ([WithPrices]):
// one turn's in an [EventTurnEnd], a run's in [Result.Usage], a
// conversation's from [Agent.Usage]. Providers name the details
// differently; robby reads OpenAI's, vLLM's and Gemini's
// prompt_tokens_details and completion_tokens_details, DeepSeek's
// prompt_cache_hit_tokens and llama.cpp's timings. A detail the provider
// does not report is 0.
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
	// in their currency: 0 without them, and for the calls of a model
	// that has none.
	Cost float64
}

// Add returns u and v summed, field by field: the usage of the calls of
// both.
func (u Usage) Add(v Usage) Usage {
	u.PromptTokens += v.PromptTokens
	u.CompletionTokens += v.CompletionTokens
	u.TotalTokens += v.TotalTokens
	u.CachedPromptTokens += v.CachedPromptTokens
	u.ReasoningTokens += v.ReasoningTokens
	u.Cost += v.Cost
	return u
}

func (u *Usage) add(v Usage) { *u = u.Add(v) }
