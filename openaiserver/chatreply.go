package openaiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/httpapi"
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

// usageWire returns u as a chat completion reports it.
func usageWire(u robby.Usage) *wireUsage {
	w := &wireUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	w.PromptTokensDetails.CachedTokens = u.CachedPromptTokens
	w.CompletionTokensDetails.ReasoningTokens = u.ReasoningTokens
	return w
}

// finishReason tells why the run ended, as OpenAI would. It is the client's
// tools to call, the turn limit or budget reached ("length"), or the answer.
func finishReason(res *robby.Result, err error) string {
	switch {
	case len(res.Pending) > 0:
		return "tool_calls"
	case limited(err):
		return "length"
	}
	return "stop"
}

func externalCalls(calls []robby.ToolCall, indexed bool) []wireToolCall {
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
func (cr *chatReply) complete(res *robby.Result, err error) {
	msg := &wireReplyMessage{Role: "assistant", ToolCalls: externalCalls(res.Pending, false)}
	if res.Text != "" || len(res.Pending) == 0 {
		msg.Content = &res.Text
	}
	fr := finishReason(res, err)
	httpapi.WriteJSON(cr.w, http.StatusOK, wireCompletion{
		ID: cr.id, Object: "chat.completion", Created: cr.created, Model: cr.model,
		Choices: []wireChoice{{Message: msg, FinishReason: &fr, Logprobs: json.RawMessage("null")}},
		Usage:   usageWire(res.Usage),
	})
}

// stream writes the events of a run as chunks. The headers wait for the first
// event, so a run failing at once still gets an HTTP error status.
func (cr *chatReply) stream(events iter.Seq2[robby.Event, error]) error {
	for ev, err := range events {
		switch ev.Kind {
		case robby.EventText:
			cr.delta(&wireMessage{Content: &ev.Delta})
		case robby.EventReasoning:
			cr.delta(&wireMessage{ReasoningContent: ev.Delta})
		case robby.EventToolCall:
			if cr.steps {
				cr.delta(&wireMessage{ReasoningContent: fmt.Sprintf("\n→ %s %s\n", ev.ToolCall.Name, ev.ToolCall.Arguments)})
			}
		case robby.EventToolResult:
			if cr.steps {
				cr.delta(&wireMessage{ReasoningContent: fmt.Sprintf("← %s: %s\n", ev.ToolCall.Name, trunc.Excerpt(ev.ToolResult.Output, 500))})
			}
		case robby.EventDone:
			if err != nil && !limited(err) {
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
	httpapi.StartSSE(cr.w)
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
func (cr *chatReply) finish(res *robby.Result, err error) {
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
// error event in the stream, as OpenAI does.
func (cr *chatReply) fail(err error, requestID string) {
	status, typ, code, msg := runError(err, requestID)
	if !cr.started {
		writeAPIError(cr.w, status, typ, code, msg)
		return
	}
	body := httpapi.ErrorBody{Message: msg, Type: typ}
	if code != "" {
		body.Code = &code
	}
	cr.event(map[string]any{"error": body})
}
