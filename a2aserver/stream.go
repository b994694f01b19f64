package a2aserver

import (
	"fmt"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/robby-go/robby"
)

// flushEvery is how often, at most, a turn's text is told while the model
// writes it. Each artifact update rewrites the stored task, so one per
// delta would cost the square of the answer's length.
const flushEvery = 100 * time.Millisecond

// A taskStream tells a run's events as A2A events: each turn's text an
// artifact, appended to as the model writes it, and each tool call and
// result a status update (working) whose message holds them as data.
type taskStream struct {
	ec        *a2asrv.ExecutorContext
	yield     func(a2a.Event, error) bool
	artifact  a2a.ArtifactID  // the turn's text, "" until it is told
	full      strings.Builder // the turn's text
	pending   strings.Builder // the text not told yet
	lastFlush time.Time
	turn      int
	// keyed names each status message and artifact by the event it tells
	// (seq, its index in the run's events) and turn, for a durable run: a
	// replica that takes the task over tells the same events again, and
	// skips those the task holds.
	keyed bool
	seq   int
}

// event tells one robby event; it returns false once the client is gone.
func (s *taskStream) event(e robby.Event) bool {
	if e.Turn != s.turn {
		if !s.endTurn() {
			return false
		}
		s.turn = e.Turn
	}
	switch e.Kind {
	case robby.EventText:
		if e.Delta != "" {
			return s.text(e.Delta)
		}
	case robby.EventTurnEnd:
		return s.endTurn()
	case robby.EventToolCall:
		return s.call(*e.ToolCall)
	case robby.EventToolResult:
		return s.result(*e.ToolResult)
	case robby.EventHandoff:
		t := e.Transfer
		return s.status(map[string]any{"handoff": map[string]any{"from": t.From, "to": t.To, "reason": t.Reason}})
	}
	return true
}

// call tells a tool call, after the turn's text.
func (s *taskStream) call(c robby.ToolCall) bool {
	if !s.endTurn() {
		return false
	}
	return s.status(map[string]any{"toolCall": map[string]any{"id": c.ID, "name": c.Name, "arguments": c.Arguments}})
}

// result tells a tool's result.
func (s *taskStream) result(r robby.ToolResult) bool {
	out := r.Output
	v := map[string]any{"id": r.Call.ID, "name": r.Call.Name}
	if r.Err != nil {
		v["isError"] = true
		if out == "" {
			out = "Error: " + r.Err.Error()
		}
	}
	v["output"] = out
	return s.status(map[string]any{"toolResult": v})
}

// text adds a delta to the turn's text. The first is told at once, the
// others every flushEvery.
func (s *taskStream) text(delta string) bool {
	s.full.WriteString(delta)
	s.pending.WriteString(delta)
	if s.artifact != "" && time.Since(s.lastFlush) < flushEvery {
		return true
	}
	var ev *a2a.TaskArtifactUpdateEvent
	if s.artifact == "" {
		ev = a2a.NewArtifactEvent(s.ec, a2a.NewTextPart(s.pending.String()))
		ev.Artifact.Name = "answer"
		if s.keyed {
			ev.Artifact.ID = s.turnArtifact()
		}
		s.artifact = ev.Artifact.ID
	} else {
		ev = a2a.NewArtifactUpdateEvent(s.ec, s.artifact, a2a.NewTextPart(s.pending.String()))
	}
	s.pending.Reset()
	s.lastFlush = time.Now()
	return s.yield(ev, nil)
}

// endTurn tells the turn's whole text, one part replacing the pieces told,
// as the artifact's last chunk.
func (s *taskStream) endTurn() bool {
	if s.full.Len() == 0 {
		return true
	}
	id := s.artifact
	switch {
	case s.keyed:
		id = s.turnArtifact()
	case id == "":
		id = a2a.NewArtifactID()
	}
	ev := &a2a.TaskArtifactUpdateEvent{TaskID: s.ec.TaskID, ContextID: s.ec.ContextID, LastChunk: true,
		Artifact: &a2a.Artifact{ID: id, Name: "answer", Parts: a2a.ContentParts{a2a.NewTextPart(s.full.String())}}}
	s.artifact = ""
	s.full.Reset()
	s.pending.Reset()
	return s.yield(ev, nil)
}

// status tells a step of the run as a working status with its data.
func (s *taskStream) status(data map[string]any) bool {
	msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, s.ec, a2a.NewDataPart(data))
	if s.keyed {
		msg.ID = fmt.Sprintf("%s-%d", s.ec.TaskID, s.seq)
	}
	return s.yield(a2a.NewStatusUpdateEvent(s.ec, a2a.TaskStateWorking, msg), nil)
}

// turnArtifact is the ID of the turn's text in a keyed stream.
func (s *taskStream) turnArtifact() a2a.ArtifactID {
	return a2a.ArtifactID(fmt.Sprintf("answer-%d", s.turn))
}
