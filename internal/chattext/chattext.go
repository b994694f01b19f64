// Package chattext reads chat-completions messages: their text, their
// calls. The agent's summaries and telemetry, the test kit's recorded
// requests, the UIs' stored chats and the evaluations' pages use it.
package chattext

import (
	"encoding/json"
	"strings"
)

// Content reads a message's content: a string, or the text of its parts
// joined. Anything else reads as empty.
func Content(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// Message is what a reader takes of a chat-completions message.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []Call          `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// Call is a tool call of an assistant message.
type Call struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Text returns the message's text, as [Content] reads it.
func (m *Message) Text() string { return Content(m.Content) }
