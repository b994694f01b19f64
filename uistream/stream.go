package uistream

import (
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"strconv"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/httpapi"
	"github.com/robby-go/robby/internal/randid"
)

// A stream writes a run's events as UI message parts.
type stream struct {
	out     *httpapi.SSE
	open    string          // "text" or "reasoning": the part open, or ""
	openID  string          // its id
	step    bool            // a step is open
	started map[string]bool // the calls whose input has started
	parts   int             // ids given
}

// newStream starts the answer: its headers and the start part. They are written
// at once, so the client sees the run begin before the model answers.
func newStream(w http.ResponseWriter) *stream {
	w.Header().Set("X-Vercel-Ai-Ui-Message-Stream", "v1")
	s := &stream{out: httpapi.NewSSE(w), started: map[string]bool{}}
	s.part(map[string]any{"type": "start", "messageId": "msg_" + randid.Alnum(24)})
	return s
}

// part writes one part.
func (s *stream) part(v any) { s.out.Data(v) }

// run writes the events of a run, then its end, and returns the error
// that ended the run, or the write that failed.
func (s *stream) run(events iter.Seq2[robby.Event, error]) error {
	last, err := httpapi.Relay(events, s.out, s.event)
	if s.out.Err != nil || err != nil && stopped(err) == "" {
		return err
	}
	s.end(last.Result, err)
	return err
}

// event writes the parts of one event.
func (s *stream) event(e robby.Event) {
	switch e.Kind {
	case robby.EventText, robby.EventReasoning:
		s.text(e.Kind.String(), e.Delta)
	case robby.EventToolCallDelta:
		s.inputStart(e.ToolCall)
		s.part(map[string]any{"type": "tool-input-delta", "toolCallId": e.ToolCall.ID, "inputTextDelta": e.Delta})
	case robby.EventToolCall:
		s.inputStart(e.ToolCall)
		p := map[string]any{"type": "tool-input-available", "toolCallId": e.ToolCall.ID, "toolName": e.ToolCall.Name,
			"input": input(e.ToolCall.Arguments), "dynamic": true}
		if e.Destructive {
			p["toolMetadata"] = map[string]bool{"destructive": true} // the page says so with the call
		}
		s.part(p)
	case robby.EventToolResult:
		s.result(e.ToolResult)
	case robby.EventProgress, robby.EventLog:
		s.part(map[string]any{"type": "data-" + e.Kind.String(), "data": httpapi.Notice(*e.Notice), "transient": true})
	case robby.EventCompaction:
		s.part(map[string]any{"type": "data-compaction", "data": httpapi.Compaction[robby.Usage](*e.Compaction), "transient": true})
	case robby.EventAgent:
		s.agent(e)
	case robby.EventHandoff:
		// Kept in the message, not transient: the page shows, in the
		// history too, which agent answers from there on.
		t := e.Transfer
		s.part(map[string]any{"type": "data-handoff", "data": map[string]string{"from": t.From, "to": t.To, "reason": t.Reason}})
	case robby.EventTurnEnd:
		s.close()
		if s.step {
			s.part(map[string]string{"type": "finish-step"})
			s.step = false
		}
	case robby.EventDone:
		s.close()
	}
}

// stepStart opens a step, if none is.
func (s *stream) stepStart() {
	if !s.step {
		s.part(map[string]string{"type": "start-step"})
		s.step = true
	}
}

// text writes a delta of text or reasoning, opening its part if another
// kind is open.
func (s *stream) text(kind, delta string) {
	s.stepStart()
	if s.open != kind {
		s.close()
		s.parts++
		s.open, s.openID = kind, kind+"_"+strconv.Itoa(s.parts)
		s.part(map[string]string{"type": kind + "-start", "id": s.openID})
	}
	s.part(map[string]string{"type": kind + "-delta", "id": s.openID, "delta": delta})
}

// close ends the open text or reasoning part.
func (s *stream) close() {
	if s.open != "" {
		s.part(map[string]string{"type": s.open + "-end", "id": s.openID})
		s.open = ""
	}
}

// inputStart opens a call's input, once.
func (s *stream) inputStart(c *robby.ToolCall) {
	s.stepStart()
	s.close()
	if !s.started[c.ID] {
		s.started[c.ID] = true
		s.part(map[string]any{"type": "tool-input-start", "toolCallId": c.ID, "toolName": c.Name, "dynamic": true})
	}
}

// input returns a call's arguments as JSON, or as the text they are when
// they are not JSON.
func input(args string) any {
	if json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	return args
}

// result writes a call's outcome: its output, or its error as the model
// read it.
func (s *stream) result(r *robby.ToolResult) {
	if r.Err != nil {
		s.part(map[string]any{"type": "tool-output-error", "toolCallId": r.Call.ID, "errorText": r.Output, "dynamic": true})
		return
	}
	s.part(map[string]any{"type": "tool-output-available", "toolCallId": r.Call.ID, "output": r.Output, "dynamic": true})
}

// agent writes an event of an agent a tool runs, under the calls it came
// through.
func (s *stream) agent(e robby.Event) {
	in, path := e.Innermost()
	ids := make([]string, len(path))
	for i, c := range path {
		ids[i] = c.ID
	}
	data := map[string]any{"path": ids, "kind": in.Kind.String()}
	if in.Delta != "" {
		data["delta"] = in.Delta
	}
	if in.ToolCall != nil {
		data["toolCall"] = map[string]string{"id": in.ToolCall.ID, "name": in.ToolCall.Name, "arguments": in.ToolCall.Arguments}
	}
	if in.ToolResult != nil {
		data["output"] = in.ToolResult.Output
		data["isError"] = in.ToolResult.Err != nil
	}
	s.part(map[string]any{"type": "data-agent", "data": data, "transient": true})
}

// end writes the finish part, with the run's usage, then [DONE].
func (s *stream) end(res *robby.Result, err error) {
	s.close()
	if s.step {
		s.part(map[string]string{"type": "finish-step"})
	}
	meta := map[string]any{}
	reason := "stop"
	if res != nil {
		meta["usage"] = httpapi.WireUsage(res.Usage)
		if len(res.Models) > 0 {
			meta["model"] = res.Models[len(res.Models)-1]
		}
		if res.Agent != "" {
			meta["agent"] = res.Agent // a team's agent that answered
		}
	}
	if why := stopped(err); why != "" {
		meta["stopped"], reason = why, "length"
	}
	s.part(map[string]any{"type": "finish", "finishReason": reason, "messageMetadata": meta})
	s.done()
}

// fail writes the error that ended the run, in words for the user.
func (s *stream) fail(err error, requestID string) {
	s.close()
	_, msg := httpapi.UpstreamError(err, requestID, apiError)
	if blocked, ok := httpapi.Blocked[*robby.GuardError](err); ok {
		msg = blocked
	}
	var apiErr *robby.APIError
	if !errors.As(err, &apiErr) && errors.Is(err, robby.ErrNoConversation) {
		msg = "The chat was not found."
	}
	s.part(map[string]string{"type": "error", "errorText": msg})
	s.part(map[string]any{"type": "finish", "finishReason": "error"})
	s.done()
}

func (s *stream) done() { s.out.Raw([]byte("[DONE]")) }

// stopped names the limit err ended a run at, or "" ([httpapi.Stopped]).
func stopped(err error) string { return httpapi.Stopped(err, robby.ErrBudget, robby.ErrMaxTurns) }

// apiError returns the status and message of the model endpoint's error.
func apiError(e *robby.APIError) (int, string) { return e.StatusCode, e.Message }
