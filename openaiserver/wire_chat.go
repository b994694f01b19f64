package openaiserver

import "encoding/json"

// The wire types of POST /v1/chat/completions. They are what the endpoint
// checks of a request, and what it writes back: a chat.completion or its
// chat.completion.chunk events.

// wireRequestMessage is what the server checks of a message.
type wireRequestMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       *string         `json:"name"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID *string         `json:"tool_call_id"`
	Refusal    *string         `json:"refusal"`
}

// wireRequestToolCall is what the server checks of a tool call in an
// assistant message.
type wireRequestToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function *struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// wireReplyMessage is the assistant message of a reply. Content and refusal
// are null when it has none, as OpenAI's.
type wireReplyMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	Refusal   *string        `json:"refusal"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

// wireMessage is a delta of the assistant message of a streamed reply.
type wireMessage struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content,omitempty"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []wireToolCall `json:"tool_calls,omitempty"`
}

type wireToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// wireUsage is a reply's usage, with the cached prompt tokens and the
// reasoning tokens in the details OpenAI reports them in.
type wireUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

type wireChoice struct {
	Index        int               `json:"index"`
	Message      *wireReplyMessage `json:"message,omitempty"`
	Delta        *wireMessage      `json:"delta,omitempty"`
	FinishReason *string           `json:"finish_reason"`
	Logprobs     json.RawMessage   `json:"logprobs,omitempty"` // null in a reply, absent in a chunk
}

type wireCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []wireChoice `json:"choices"`
	Usage   *wireUsage   `json:"usage,omitempty"`
}
