package agui

import (
	"iter"
	"net/http"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/httpapi"
	"github.com/robby-go/robby/internal/randid"
)

// A stream writes a run's events as AG-UI events.
type stream struct {
	out           *httpapi.SSE
	thread, runID string
	message       string          // the turn's assistant message id
	open          string          // "text" or "reasoning": the message open, or ""
	openID        string          // its id
	calls         map[string]bool // the calls started: true while their arguments stream
	lastTurn      int             // the turn of the last event
}

// event is an AG-UI event: its type, and its fields.
type event map[string]any

// newStream starts the answer: its headers and RUN_STARTED, at once.
func newStream(w http.ResponseWriter, thread, run string) *stream {
	s := &stream{out: httpapi.NewSSE(w), thread: thread, runID: run, calls: map[string]bool{}}
	s.send("RUN_STARTED", event{"threadId": thread, "runId": run})
	return s
}

// send writes one event.
func (s *stream) send(typ string, e event) {
	e["type"] = typ
	s.out.Data(e)
}

// run writes the events of a run, then its end, and returns the error
// that ended the run, or the write that failed.
func (s *stream) run(events iter.Seq2[robby.Event, error]) error {
	last, err := httpapi.Relay(events, s.out, s.event)
	if s.out.Err != nil || err != nil && stopped(err) == "" {
		return err
	}
	s.finish(last.Result, err)
	return err
}

// event writes the AG-UI events of one robby event.
func (s *stream) event(e robby.Event) {
	if e.Turn != s.lastTurn {
		s.close()
		s.lastTurn, s.message = e.Turn, "msg_"+randid.Alnum(24)
	}
	switch e.Kind {
	case robby.EventText:
		s.text(e.Delta)
	case robby.EventReasoning:
		s.reasoning(e.Delta)
	case robby.EventToolCallDelta:
		s.callStart(e.ToolCall)
		if e.Delta != "" {
			s.send("TOOL_CALL_ARGS", event{"toolCallId": e.ToolCall.ID, "delta": e.Delta})
		}
	case robby.EventToolCall:
		s.callComplete(e.ToolCall)
	case robby.EventToolResult:
		s.send("TOOL_CALL_RESULT", event{"messageId": "msg_" + randid.Alnum(24), "toolCallId": e.ToolResult.Call.ID,
			"content": e.ToolResult.Output, "role": "tool"})
	case robby.EventProgress, robby.EventLog:
		s.send("CUSTOM", event{"name": "robby." + e.Kind.String(), "value": httpapi.Notice(*e.Notice)})
	case robby.EventCompaction:
		s.send("CUSTOM", event{"name": "robby.compaction", "value": httpapi.Compaction[robby.Usage](*e.Compaction)})
	case robby.EventAgent:
		s.agent(e)
	case robby.EventHandoff:
		t := e.Transfer
		s.send("CUSTOM", event{"name": "robby.handoff", "value": event{"from": t.From, "to": t.To, "reason": t.Reason}})
	case robby.EventTurnEnd:
		s.close()
		if e.Usage != nil {
			s.send("CUSTOM", event{"name": "robby.usage", "value": httpapi.WireUsage(*e.Usage)})
		}
	}
}

// text writes a delta of the turn's answer, opening its message.
func (s *stream) text(delta string) {
	if s.open != "text" {
		s.close()
		s.open, s.openID = "text", s.message
		s.send("TEXT_MESSAGE_START", event{"messageId": s.openID, "role": "assistant"})
	}
	if delta != "" {
		s.send("TEXT_MESSAGE_CONTENT", event{"messageId": s.openID, "delta": delta})
	}
}

// reasoning writes a delta of the turn's reasoning, opening its span and
// message.
func (s *stream) reasoning(delta string) {
	if s.open != "reasoning" {
		s.close()
		s.open, s.openID = "reasoning", "rsn_"+randid.Alnum(24)
		s.send("REASONING_START", event{"messageId": s.openID})
		s.send("REASONING_MESSAGE_START", event{"messageId": s.openID, "role": "reasoning"})
	}
	if delta != "" {
		s.send("REASONING_MESSAGE_CONTENT", event{"messageId": s.openID, "delta": delta})
	}
}

// close ends the open text or reasoning message.
func (s *stream) close() {
	switch s.open {
	case "text":
		s.send("TEXT_MESSAGE_END", event{"messageId": s.openID})
	case "reasoning":
		s.send("REASONING_MESSAGE_END", event{"messageId": s.openID})
		s.send("REASONING_END", event{"messageId": s.openID})
	}
	s.open = ""
}

// callStart opens a call, once.
func (s *stream) callStart(c *robby.ToolCall) {
	s.close()
	if _, ok := s.calls[c.ID]; !ok {
		s.calls[c.ID] = true
		s.send("TOOL_CALL_START", event{"toolCallId": c.ID, "toolCallName": c.Name, "parentMessageId": s.message})
	}
}

// callComplete ends a call's arguments; a call that came whole sends them
// in one piece.
func (s *stream) callComplete(c *robby.ToolCall) {
	_, started := s.calls[c.ID]
	s.callStart(c)
	if !started {
		s.send("TOOL_CALL_ARGS", event{"toolCallId": c.ID, "delta": c.Arguments})
	}
	if s.calls[c.ID] {
		s.calls[c.ID] = false
		s.send("TOOL_CALL_END", event{"toolCallId": c.ID})
	}
}

// agent writes an event of an agent a tool runs, under the calls it came
// through.
func (s *stream) agent(e robby.Event) {
	in, path := e.Innermost()
	ids := make([]string, len(path))
	for i, c := range path {
		ids[i] = c.ID
	}
	v := event{"path": ids, "kind": in.Kind.String()}
	if in.Delta != "" {
		v["delta"] = in.Delta
	}
	if in.ToolCall != nil {
		v["toolCall"] = event{"id": in.ToolCall.ID, "name": in.ToolCall.Name, "arguments": in.ToolCall.Arguments}
	}
	if in.ToolResult != nil {
		v["output"] = in.ToolResult.Output
	}
	s.send("CUSTOM", event{"name": "robby.agent", "value": v})
}

// finish writes RUN_FINISHED, with the run's usage, and the front end's
// calls it awaits.
func (s *stream) finish(res *robby.Result, err error) {
	s.close()
	outcome := event{"type": "success"}
	e := event{"threadId": s.thread, "runId": s.runID, "outcome": outcome}
	result := event{}
	if res != nil {
		for _, c := range res.Pending {
			s.callComplete(&c)
		}
		if len(res.Pending) > 0 {
			ids := make([]string, len(res.Pending))
			for i, c := range res.Pending {
				ids[i] = c.ID
			}
			outcome["pendingToolCallIds"] = ids
		}
		u := res.Usage
		tu := event{"inputTokens": u.PromptTokens, "outputTokens": u.CompletionTokens, "totalTokens": u.TotalTokens,
			"reasoningTokens": u.ReasoningTokens, "cachedInputTokens": u.CachedPromptTokens}
		if len(res.Models) > 0 {
			tu["model"] = res.Models[len(res.Models)-1]
		}
		e["usage"] = []event{tu}
		result["usage"] = httpapi.WireUsage(u)
	}
	if why := stopped(err); why != "" {
		result["stopped"] = why
	}
	if len(result) > 0 {
		e["result"] = result
	}
	s.send("RUN_FINISHED", e)
}

// fail writes RUN_ERROR, in words for the user.
func (s *stream) fail(err error, requestID string) {
	s.close()
	status, msg := httpapi.UpstreamError(err, requestID, apiError)
	code := http.StatusText(status)
	if blocked, ok := httpapi.Blocked[*robby.GuardError](err); ok {
		msg, code = blocked, httpapi.GuardCode
	}
	s.send("RUN_ERROR", event{"message": msg, "code": code})
}

// stopped names the limit err ended a run at, or "" ([httpapi.Stopped]).
func stopped(err error) string { return httpapi.Stopped(err, robby.ErrBudget, robby.ErrMaxTurns) }

// apiError returns the status and message of the model endpoint's error.
func apiError(e *robby.APIError) (int, string) { return e.StatusCode, e.Message }
