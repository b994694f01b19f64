package agui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/chattext"
	"github.com/robby-go/robby/internal/httpapi"
)

// wireInput is AG-UI's RunAgentInput, the fields robby reads.
type wireInput struct {
	ThreadID string        `json:"threadId"`
	RunID    string        `json:"runId"`
	Messages []wireMessage `json:"messages"`
	Tools    []struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
	} `json:"tools"`
}

// wireMessage is an AG-UI message.
type wireMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []wireToolCall  `json:"toolCalls"`
	ToolCallID string          `json:"toolCallId"`
	Error      string          `json:"error"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// An input is a decoded RunAgentInput: the history, and what is new. What is
// new is the user's prompt, or the results of the front end's tools.
type input struct {
	ThreadID, RunID string
	history         []openai.ChatCompletionMessageParamUnion
	prompt          string
	results         []robby.ToolResult
	tools           []openai.FunctionDefinitionParam
}

// decodeInput reads a RunAgentInput.
func decodeInput(body []byte, maxMessages int) (*input, error) {
	var w wireInput
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, fmt.Errorf("the body is not a RunAgentInput: %w", err)
	}
	switch {
	case w.ThreadID == "" || w.RunID == "":
		return nil, errors.New("a RunAgentInput needs a threadId and a runId")
	case len(w.Messages) > maxMessages:
		return nil, fmt.Errorf("the input has %d messages, more than the %d allowed", len(w.Messages), maxMessages)
	}
	in := &input{ThreadID: w.ThreadID, RunID: w.RunID}
	for _, t := range w.Tools {
		in.tools = append(in.tools, openai.FunctionDefinitionParam{Name: t.Name,
			Description: openai.String(t.Description), Parameters: shared.FunctionParameters(t.Parameters)})
	}
	msgs := w.Messages
	if n := len(msgs); n > 0 && msgs[n-1].Role == "user" {
		in.prompt, msgs = chattext.Content(msgs[n-1].Content), msgs[:n-1]
	}
	for i := len(msgs) - 1; in.prompt == "" && i >= 0 && msgs[i].Role == "tool"; i-- {
		in.results = append([]robby.ToolResult{toolResult(msgs[i])}, in.results...)
	}
	for _, m := range msgs {
		if msg, ok := chatMessage(m); ok {
			in.history = append(in.history, msg)
		}
	}
	return in, nil
}

func toolResult(m wireMessage) robby.ToolResult {
	r := robby.ToolResult{Call: robby.ToolCall{ID: m.ToolCallID}, Output: chattext.Content(m.Content)}
	if m.Error != "" {
		r.Err = errors.New(m.Error)
	}
	return r
}

// chatMessage returns an AG-UI message as a chat message; activity and
// reasoning messages have none.
func chatMessage(m wireMessage) (openai.ChatCompletionMessageParamUnion, bool) {
	switch m.Role {
	case "user":
		return openai.UserMessage(chattext.Content(m.Content)), true
	case "system":
		return openai.SystemMessage(chattext.Content(m.Content)), true
	case "developer":
		return openai.DeveloperMessage(chattext.Content(m.Content)), true
	case "assistant":
		calls := make([]httpapi.Call, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			calls[i] = httpapi.Call{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments}
		}
		return httpapi.AssistantMessage(chattext.Content(m.Content), calls), true
	case "tool":
		out := chattext.Content(m.Content)
		if m.Error != "" {
			out = "Error: " + m.Error
		}
		return openai.ToolMessage(out, m.ToolCallID), true
	}
	return openai.ChatCompletionMessageParamUnion{}, false
}

// start starts the run of an input: over its messages, or over the stored
// thread.
func (h *Handler) start(r *http.Request, in *input) (iter.Seq2[robby.Event, error], error) {
	conv := h.agent.Clone()
	var opts []robby.RunOption
	if len(in.tools) > 0 {
		opts = append(opts, robby.WithCallerTools(in.tools...))
	}
	if h.opts.Store == nil {
		conv.Reset()
		conv.AddMessages(in.history...)
	} else {
		if !httpapi.ValidID(in.ThreadID) {
			return nil, errBadThreadID
		}
		opts = append(opts, robby.WithConversation(h.opts.Store, httpapi.User(r), in.ThreadID))
		switch {
		case in.prompt != "":
		case len(in.results) > 0:
			if err := h.onlyClientResults(r.Context(), httpapi.User(r), in); err != nil {
				return nil, err
			}
			opts = append(opts, robby.WithToolResults(in.results...))
		default:
			return nil, errNoInput
		}
	}
	if strings.TrimSpace(in.prompt) != "" {
		return conv.Stream(r.Context(), in.prompt, opts...), nil
	}
	return conv.ResumeStream(r.Context(), opts...), nil
}

// onlyClientResults refuses results that answer calls of the agent's own tools
// in the stored thread. The agent runs those, never the client. A call a crash
// left unanswered is run again.
func (h *Handler) onlyClientResults(ctx context.Context, user string, in *input) error {
	own := map[string]bool{}
	for _, t := range h.agent.Tools() {
		own[t.Name()] = true
	}
	if len(own) == 0 {
		return nil
	}
	_, msgs, err := h.opts.Store.Load(ctx, user, in.ThreadID)
	if err != nil {
		return nil // no thread to answer: the run says so
	}
	ownIDs := map[string]bool{}
	for _, m := range msgs {
		var a struct {
			ToolCalls []wireToolCall `json:"tool_calls"`
		}
		if json.Unmarshal(m.Chat, &a) != nil {
			continue
		}
		for _, c := range a.ToolCalls {
			if own[c.Function.Name] {
				ownIDs[c.ID] = true
			}
		}
	}
	for _, r := range in.results {
		if ownIDs[r.Call.ID] {
			return fmt.Errorf("tool message for call %q answers a call of one of the agent's own tools: "+
				"the agent runs them, a client answers only its own tools' calls", r.Call.ID)
		}
	}
	return nil
}

var errBadThreadID = errors.New("with a store, the threadId names a stored thread: 1 to 128 letters, digits, '-' or '_'")
