package robby

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Middleware wraps an agent's model calls and tool calls, to see, change
// or refuse them. It can log or trace them, redact a prompt, answer from a
// cache, or limit a rate. A middleware gets the call and the next handler.
// It calls next to go on, or returns without calling it. Middleware given
// first is outermost: it sees the call first and the result last. An agent
// with none pays nothing for the hooks.
//
// Middleware is called on the goroutine of the call it wraps. For a model
// call, that is the run's. For a tool call, it is the goroutine running
// the tool, concurrently with the other calls of its turn. A tool
// middleware's panic is recovered as the tool's would be ([ErrToolPanic]).
// A model middleware's panic is the run's, as any panic of the caller's
// code.

// A ModelRequest is one model call as a [ModelMiddleware] sees it. It is
// the chat-completions request about to be sent, after [WithCompaction]
// fitted it. A middleware changes the request by changing its fields. It
// may set Model, or replace Messages or an element of them. The JSON
// values are shared with the conversation: never write into them, replace
// them.
type ModelRequest struct {
	// Model is the model asked for: the agent's ([WithModel]), or the
	// run's ([WithRunParams]). If it fails, [WithFallback]'s models are
	// tried after it.
	Model string
	// Messages are the messages sent, in order, each as the
	// chat-completions API takes it, such as
	// {"role":"user","content":"Hello"}. Changing them changes what the
	// model reads, not the conversation.
	Messages []json.RawMessage
	// Tools are the definitions of the tools offered, as the API takes
	// them.
	Tools []json.RawMessage
	// Stream is whether the reply is streamed. In a streamed call, the
	// text and reasoning reach the run's events as they arrive, while next
	// runs. A response a middleware returns without calling next reaches
	// them whole.
	Stream bool
}

// A ModelResponse is the reply to a [ModelRequest]: the assistant message.
// It is read whole from a plain response or put together from a stream. A
// middleware may change it; the run keeps what the last middleware
// returns. The text and reasoning of a streamed reply have reached the
// run's events already. Changing them changes only the result and the
// conversation.
type ModelResponse struct {
	// Model is the model that answered: the one asked for, or the
	// [Fallback] that took over from it.
	Model string
	// Text is the answer, or the model's refusal.
	Text string
	// Reasoning is the reasoning the model showed, for providers that
	// send it.
	Reasoning string
	// ToolCalls are the calls the model asked for, each with an ID.
	ToolCalls []ToolCall
	// FinishReason is why the model stopped, as the provider says it,
	// such as "stop", "tool_calls" or "length".
	FinishReason string
	// Usage is the call's usage, as the provider reported it, with its
	// Cost at Model's price ([WithPrices]). The run counts what the last
	// middleware returns. A response it made itself costs what it says.
	Usage Usage

	extras map[string]map[string]any // provider fields of the calls, by ID
}

// A ModelHandler makes a model call: the next middleware's, or robby's
// own, which sends the request. On error, a response that is not nil holds
// what arrived before the error.
type ModelHandler func(ctx context.Context, req *ModelRequest) (*ModelResponse, error)

// A ModelMiddleware wraps a model call. It may look at or change req, and
// look at or change the response. It may also skip next, to answer itself
// or refuse with an error.
type ModelMiddleware func(ctx context.Context, req *ModelRequest, next ModelHandler) (*ModelResponse, error)

// A ToolHandler runs a tool call and returns what the model reads of it,
// before [WithMaxToolOutput] cuts it. That is the tool's output: a string
// as it is, another value as JSON. The model reads an error as "Error: "
// and its text.
type ToolHandler func(ctx context.Context, call ToolCall) (string, error)

// A ToolMiddleware wraps a tool call, after the tool was found and its
// arguments checked against its schema. It may look at the call and call
// next, or change the call first: other arguments are checked again. It
// may return without calling next, to answer itself or refuse with an
// error. It may look at or change the output.
type ToolMiddleware func(ctx context.Context, call ToolCall, next ToolHandler) (string, error)

// WithModelMiddleware wraps every model call of the agent in mw, in order:
// the first given is the outermost. That is the turns of runs, the
// building blocks' calls, and the summaries of [WithCompaction]. Given
// again, it adds to the list.
func WithModelMiddleware(mw ...ModelMiddleware) Option {
	return func(c *config) error {
		if slices.ContainsFunc(mw, func(m ModelMiddleware) bool { return m == nil }) {
			return errors.New("robby: WithModelMiddleware: nil middleware")
		}
		c.modelMW = append(c.modelMW, mw...)
		return nil
	}
}

// WithToolMiddleware wraps every tool call the agent runs, local or MCP, in
// mw, in order. The first given is the outermost. [WithApproval]'s
// callback, if set, comes before all of them. Given again, it adds to the
// list.
func WithToolMiddleware(mw ...ToolMiddleware) Option {
	return func(c *config) error {
		if slices.ContainsFunc(mw, func(m ToolMiddleware) bool { return m == nil }) {
			return errors.New("robby: WithToolMiddleware: nil middleware")
		}
		c.toolMW = append(c.toolMW, mw...)
		return nil
	}
}

// approval is the tool middleware of [WithApproval].
func approval(approve func(context.Context, ToolCall) error) ToolMiddleware {
	return func(ctx context.Context, call ToolCall, next ToolHandler) (string, error) {
		if err := approve(ctx, call); err != nil {
			return "", fmt.Errorf("%w: %w", ErrNotApproved, err)
		}
		return next(ctx, call)
	}
}

// toolMiddleware returns the tool middleware of cfg, approval first. It
// returns nil for none.
func toolMiddleware(cfg *config) []ToolMiddleware {
	if cfg.approve == nil {
		return slices.Clone(cfg.toolMW)
	}
	return append([]ToolMiddleware{approval(cfg.approve)}, cfg.toolMW...)
}
