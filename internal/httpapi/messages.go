package httpapi

import (
	"errors"

	"github.com/openai/openai-go/v3"
)

// A Call is a tool call of a client's history: robby.ToolCall's fields.
type Call struct {
	ID, Name, Arguments string
}

// AssistantMessage is an assistant message of text and calls, as a
// client's history gives it back.
func AssistantMessage(text string, calls []Call) openai.ChatCompletionMessageParamUnion {
	var m openai.ChatCompletionAssistantMessageParam
	if text != "" || len(calls) == 0 {
		m.Content.OfString = openai.String(text)
	}
	for _, c := range calls {
		m.ToolCalls = append(m.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: c.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Arguments}}})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &m}
}

// WireUsage is a run's usage as the UIs read it: robby.Usage's fields,
// converted (WireUsage(u)).
type WireUsage struct {
	PromptTokens       int64   `json:"promptTokens"`
	CompletionTokens   int64   `json:"completionTokens"`
	TotalTokens        int64   `json:"totalTokens"`
	CachedPromptTokens int64   `json:"cachedPromptTokens,omitempty"`
	ReasoningTokens    int64   `json:"reasoningTokens,omitempty"`
	Cost               float64 `json:"cost,omitempty"`
}

// Notice is an MCP server's progress or log message on a call, as the UIs
// read it: robby.Notice's fields, converted (Notice(*n)).
type Notice struct {
	Server   string  `json:"server"`
	Tool     string  `json:"tool"`
	Level    string  `json:"level,omitempty"`
	Message  string  `json:"message,omitempty"`
	Progress float64 `json:"progress,omitempty"`
	Total    float64 `json:"total,omitempty"`
}

// Compaction is what compaction did to a request, as the UIs read it. It
// has robby.Compaction's fields: Compaction[robby.Usage](*c) converts.
// U, its Usage's type, keeps the root out. The summary and its usage are
// not sent.
type Compaction[U any] struct {
	Policy          string `json:"policy"`
	Retry           bool   `json:"retry,omitempty"`
	TurnsDropped    int    `json:"turnsDropped"`
	MessagesDropped int    `json:"messagesDropped"`
	MessagesCut     int    `json:"messagesCut,omitempty"`
	TokensBefore    int    `json:"tokensBefore"`
	TokensAfter     int    `json:"tokensAfter"`
	Budget          int    `json:"budget"`
	Summary         string `json:"-"`
	Usage           U      `json:"-"`
}

// Stopped names the limit err ended a run at: "budget", "max_turns" or
// "". budget and maxTurns are those limits' errors. A run stopped so
// replies with its partial result, not with an error.
func Stopped(err, budget, maxTurns error) string {
	switch {
	case errors.Is(err, budget):
		return "budget"
	case errors.Is(err, maxTurns):
		return "max_turns"
	}
	return ""
}

// ValidID reports whether id may name a stored conversation a client
// gives: 1 to 128 letters, digits, '-' or '_'.
func ValidID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
