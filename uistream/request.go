package uistream

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby/internal/httpapi"
)

// wireRequest is the body DefaultChatTransport posts.
type wireRequest struct {
	ID       string        `json:"id"`
	Messages []wireMessage `json:"messages"`
	Trigger  string        `json:"trigger"`
}

// wireMessage is a UI message.
type wireMessage struct {
	ID       string     `json:"id"`
	Role     string     `json:"role"`
	Parts    []wirePart `json:"parts"`
	Metadata any        `json:"metadata,omitempty"`
}

// wirePart is a part of a UI message: the fields of the kinds robby
// reads and writes.
type wirePart struct {
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	State      string          `json:"state,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	ErrorText  string          `json:"errorText,omitempty"`
	Data       any             `json:"data,omitempty"` // a data part's, such as data-handoff's
}

// A request is a decoded chat request: the history before the new
// message, and the new message's text.
type request struct {
	ID      string
	trigger string
	history []openai.ChatCompletionMessageParamUnion
	prompt  string
}

// decodeRequest reads a chat request. The last message must be the
// user's; a stored chat cannot be regenerated, as its answer is kept.
func decodeRequest(body []byte, maxMessages int) (*request, error) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, fmt.Errorf("the body is not a chat request: %w", err)
	}
	switch {
	case len(w.Messages) == 0:
		return nil, errors.New("the request has no messages")
	case len(w.Messages) > maxMessages:
		return nil, fmt.Errorf("the request has %d messages, more than the %d allowed", len(w.Messages), maxMessages)
	}
	last := w.Messages[len(w.Messages)-1]
	if last.Role != "user" {
		return nil, fmt.Errorf("the last message is the %s's: it must be the user's new message", last.Role)
	}
	req := &request{ID: w.ID, trigger: w.Trigger, prompt: textOf(last.Parts)}
	if strings.TrimSpace(req.prompt) == "" {
		return nil, errors.New("the user's new message has no text")
	}
	for _, m := range w.Messages[:len(w.Messages)-1] {
		msgs, err := history(m)
		if err != nil {
			return nil, err
		}
		req.history = append(req.history, msgs...)
	}
	return req, nil
}

// textOf joins the text parts of a message.
func textOf(parts []wirePart) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// history returns the chat messages of a UI message of the history.
func history(m wireMessage) ([]openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case "user":
		return []openai.ChatCompletionMessageParamUnion{openai.UserMessage(textOf(m.Parts))}, nil
	case "system":
		return []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(textOf(m.Parts))}, nil
	case "assistant":
		return assistant(m.Parts), nil
	}
	return nil, fmt.Errorf("message %q has the role %q: a UI message's role is system, user or assistant", m.ID, m.Role)
}

// assistant returns the chat messages of an assistant's UI message. There is
// one assistant message a step, with its text and finished tool calls. Each
// call is followed by its result.
func assistant(parts []wirePart) []openai.ChatCompletionMessageParamUnion {
	var out []openai.ChatCompletionMessageParamUnion
	var text strings.Builder
	var calls []httpapi.Call
	var results []openai.ChatCompletionMessageParamUnion
	flush := func() {
		if text.Len() > 0 || len(calls) > 0 {
			out = append(out, httpapi.AssistantMessage(text.String(), calls))
			out = append(out, results...)
		}
		text.Reset()
		calls, results = nil, nil
	}
	for _, p := range parts {
		switch {
		case p.Type == "step-start":
			flush()
		case p.Type == "text":
			text.WriteString(p.Text)
		case p.Type == "dynamic-tool" || strings.HasPrefix(p.Type, "tool-"):
			call, result, ok := toolPart(p)
			if ok {
				calls = append(calls, call)
				results = append(results, result)
			}
		}
	}
	flush()
	return out
}

// toolPart returns the call and result of a finished tool part.
func toolPart(p wirePart) (httpapi.Call, openai.ChatCompletionMessageParamUnion, bool) {
	name := p.ToolName
	if p.Type != "dynamic-tool" {
		name = strings.TrimPrefix(p.Type, "tool-")
	}
	args := string(p.Input)
	if args == "" || args == "null" {
		args = "{}"
	}
	call := httpapi.Call{ID: p.ToolCallID, Name: name, Arguments: args}
	switch p.State {
	case "output-available":
		var s string
		if json.Unmarshal(p.Output, &s) != nil {
			s = string(p.Output)
		}
		return call, openai.ToolMessage(s, p.ToolCallID), true
	case "output-error":
		return call, openai.ToolMessage(p.ErrorText, p.ToolCallID), true
	}
	return call, openai.ChatCompletionMessageParamUnion{}, false
}
