package robby

import (
	"encoding/json"

	"github.com/robby-go/robby/internal/chattext"
)

// The messages of the GenAI conventions (gen_ai.input.messages and
// gen_ai.output.messages), recorded only with WithTracedContent.
type (
	otelMessage struct {
		Role         string     `json:"role"`
		Parts        []otelPart `json:"parts"`
		FinishReason string     `json:"finish_reason,omitempty"`
	}
	otelPart struct {
		Type      string          `json:"type"`
		Content   string          `json:"content,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
		Response  string          `json:"response,omitempty"`
	}
)

// sentMessage is what the conventions keep of a chat-completions message.
type sentMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// inputMessages returns the messages of req in the conventions' form.
func inputMessages(req *request) string {
	var out []otelMessage
	for _, part := range [...][]json.RawMessage{req.history[:req.lead], req.system, req.history[req.lead:], req.pending} {
		for _, raw := range part {
			var m sentMessage
			if json.Unmarshal(raw, &m) != nil {
				continue
			}
			om := otelMessage{Role: m.Role}
			if text := chattext.Content(m.Content); text != "" {
				if m.Role == "tool" {
					om.Parts = append(om.Parts, otelPart{Type: "tool_call_response", ID: m.ToolCallID, Response: text})
				} else {
					om.Parts = append(om.Parts, otelPart{Type: "text", Content: text})
				}
			}
			for _, c := range m.ToolCalls {
				om.Parts = append(om.Parts, toolCallPart(c.ID, c.Function.Name, c.Function.Arguments))
			}
			out = append(out, om)
		}
	}
	return marshalMessages(out)
}

// outputMessages returns the reply in the conventions' form.
func outputMessages(r *reply) string {
	om := otelMessage{Role: "assistant", FinishReason: r.finish}
	if s := r.reasoning.String(); s != "" {
		om.Parts = append(om.Parts, otelPart{Type: "reasoning", Content: s})
	}
	if s := r.text.String(); s != "" {
		om.Parts = append(om.Parts, otelPart{Type: "text", Content: s})
	}
	for _, c := range r.calls { // not toolCalls, which makes the missing ids anew
		om.Parts = append(om.Parts, toolCallPart(c.id, c.name, c.args.Text()))
	}
	return marshalMessages([]otelMessage{om})
}

func toolCallPart(id, name, args string) otelPart {
	p := otelPart{Type: "tool_call", ID: id, Name: name}
	if json.Valid([]byte(args)) {
		p.Arguments = json.RawMessage(args)
	}
	return p
}

func marshalMessages(ms []otelMessage) string {
	for i := range ms {
		if ms[i].Parts == nil {
			ms[i].Parts = []otelPart{}
		}
	}
	b, err := json.Marshal(ms)
	if err != nil {
		return ""
	}
	return string(b)
}
