package robby

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"

	"github.com/robby-go/robby/internal/trunc"
)

// chatReply writes the answer to one chat-completions request, as a
// chat.completion object or as chat.completion.chunk events.
type chatReply struct {
	w       http.ResponseWriter
	model   string
	id      string
	created int64
	usage   bool // stream_options.include_usage
	steps   bool // show tool steps as reasoning
	started bool // the stream's headers were written
}

// wireMessage is the assistant message of a reply, or a delta of it.
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

type wireUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

type wireChoice struct {
	Index        int          `json:"index"`
	Message      *wireMessage `json:"message,omitempty"`
	Delta        *wireMessage `json:"delta,omitempty"`
	FinishReason *string      `json:"finish_reason"`
}

type wireCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []wireChoice `json:"choices"`
	Usage   *wireUsage   `json:"usage,omitempty"`
}

func usageWire(u Usage) *wireUsage {
	return &wireUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
}

// finishReason tells why the run ended, as OpenAI would: the client's tools
// to call, the turn limit reached ("length"), or the answer.
func finishReason(res *Result, err error) string {
	switch {
	case len(res.Pending) > 0:
		return "tool_calls"
	case errors.Is(err, ErrMaxTurns):
		return "length"
	}
	return "stop"
}

func externalCalls(calls []ToolCall, indexed bool) []wireToolCall {
	out := make([]wireToolCall, len(calls))
	for i, c := range calls {
		out[i].ID, out[i].Type = c.ID, "function"
		out[i].Function.Name, out[i].Function.Arguments = c.Name, c.Arguments
		if indexed {
			out[i].Index = &i
		}
	}
	return out
}

// complete writes a plain reply.
func (cr *chatReply) complete(res *Result, err error) {
	msg := &wireMessage{Role: "assistant", ToolCalls: externalCalls(res.Pending, false)}
	if res.Text != "" || len(res.Pending) == 0 {
		msg.Content = &res.Text
	}
	fr := finishReason(res, err)
	writeJSON(cr.w, http.StatusOK, wireCompletion{
		ID: cr.id, Object: "chat.completion", Created: cr.created, Model: cr.model,
		Choices: []wireChoice{{Message: msg, FinishReason: &fr}},
		Usage:   usageWire(res.Usage),
	})
}

// stream writes the events of a run as chunks. The headers are held back
// until the first event, so that a run failing at once still gets an HTTP
// error status.
func (cr *chatReply) stream(events iter.Seq2[Event, error]) error {
	for ev, err := range events {
		switch ev.Kind {
		case EventText:
			cr.delta(&wireMessage{Content: &ev.Delta})
		case EventReasoning:
			cr.delta(&wireMessage{ReasoningContent: ev.Delta})
		case EventToolCall:
			if cr.steps {
				cr.delta(&wireMessage{ReasoningContent: fmt.Sprintf("\n→ %s %s\n", ev.ToolCall.Name, ev.ToolCall.Arguments)})
			}
		case EventToolResult:
			if cr.steps {
				cr.delta(&wireMessage{ReasoningContent: fmt.Sprintf("← %s: %s\n", ev.ToolCall.Name, trunc.Excerpt(ev.ToolResult.Output, 500))})
			}
		case EventDone:
			if err != nil && !errors.Is(err, ErrMaxTurns) {
				return err
			}
			cr.finish(ev.Result, err)
			return nil
		}
	}
	return errors.New("robby: stream ended without a result")
}

func (cr *chatReply) start() {
	if cr.started {
		return
	}
	cr.started = true
	h := cr.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // no proxy buffering
	cr.w.WriteHeader(http.StatusOK)
	empty := ""
	cr.chunk(&wireMessage{Role: "assistant", Content: &empty}, nil)
}

func (cr *chatReply) delta(m *wireMessage) {
	cr.start()
	cr.chunk(m, nil)
}

func (cr *chatReply) chunk(m *wireMessage, finish *string) {
	cr.event(wireCompletion{ID: cr.id, Object: "chat.completion.chunk", Created: cr.created, Model: cr.model,
		Choices: []wireChoice{{Delta: m, FinishReason: finish}}})
}

func (cr *chatReply) event(v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(cr.w, "data: %s\n\n", b)
	if f, ok := cr.w.(http.Flusher); ok {
		f.Flush()
	}
}

// finish writes the client's tool calls, the finish reason, the usage if
// asked for, and [DONE].
func (cr *chatReply) finish(res *Result, err error) {
	cr.start()
	if len(res.Pending) > 0 {
		cr.chunk(&wireMessage{ToolCalls: externalCalls(res.Pending, true)}, nil)
	}
	fr := finishReason(res, err)
	cr.chunk(&wireMessage{}, &fr)
	if cr.usage {
		cr.event(wireCompletion{ID: cr.id, Object: "chat.completion.chunk", Created: cr.created, Model: cr.model,
			Choices: []wireChoice{}, Usage: usageWire(res.Usage)})
	}
	fmt.Fprint(cr.w, "data: [DONE]\n\n")
	if f, ok := cr.w.(http.Flusher); ok {
		f.Flush()
	}
}

// fail reports err: with its status while nothing was written, or as an
// error event in the stream, as OpenAI does. The model endpoint's own error
// is passed on; any other failure (the endpoint unreachable, a reply robby
// could not read) is reported by request id only, since its text names
// addresses the client has no business knowing.
func (cr *chatReply) fail(err error, requestID string) {
	status, typ := http.StatusBadGateway, "upstream_error"
	msg := fmt.Sprintf("The agent could not get an answer from its model (request id %s); the server's log has the details.", requestID)
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		msg = "upstream: " + apiErr.Message
		if apiErr.StatusCode >= 400 {
			status = apiErr.StatusCode
		}
	}
	if !cr.started {
		writeAPIError(cr.w, status, typ, "", msg)
		return
	}
	cr.event(map[string]any{"error": apiErrorBody{Message: msg, Type: typ}})
}

type apiErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// writeAPIError writes an error in OpenAI's shape.
func writeAPIError(w http.ResponseWriter, status int, typ, code, msg string) {
	e := apiErrorBody{Message: msg, Type: typ}
	if code != "" {
		e.Code = &code
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
