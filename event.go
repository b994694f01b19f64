package robby

import (
	"context"
	"fmt"
)

// EventKind tells which fields of an [Event] are set.
type EventKind int

// The kinds of [Event], in the order a turn produces them.
const (
	EventText       EventKind = iota + 1 // Delta is a piece of the answer
	EventReasoning                       // Delta is a piece of the model's reasoning
	EventToolCall                        // ToolCall is a complete call, about to run
	EventToolResult                      // ToolResult is the outcome of a call
	EventProgress                        // Notice is an MCP server's progress on a call
	EventLog                             // Notice is a message an MCP server logged during a call
	EventTurnEnd                         // the turn is over; Usage is its usage
	EventDone                            // the run is over; Result is set
	EventCompaction                      // Compaction says how the request about to be sent was shortened
	// EventPartial comes in a [StreamTyped] run, after the text that
	// completed more of the answer: [TypedEvent.Value] is the answer so far.
	EventPartial
)

var eventNames = [...]string{"", "text", "reasoning", "tool-call", "tool-result", "progress", "log", "turn-end", "done", "compaction", "partial"}

// String returns the kind's name, such as "tool-call".
func (k EventKind) String() string {
	if k > 0 && int(k) < len(eventNames) {
		return eventNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// An Event is one step of a streamed run. Kind says which of the other
// fields are set: the pointers are nil for the kinds that do not carry
// them.
type Event struct {
	Kind       EventKind
	Turn       int         // the turn the event belongs to, from 1
	Delta      string      // EventText, EventReasoning
	ToolCall   *ToolCall   // EventToolCall, EventToolResult
	ToolResult *ToolResult // EventToolResult
	Notice     *Notice     // EventProgress, EventLog
	Usage      *Usage      // EventTurnEnd
	Result     *Result     // EventDone
	Compaction *Compaction // EventCompaction
}

// A Notice is a notification an MCP server sent while one of its tools ran.
type Notice struct {
	Server   string
	Tool     string  // for progress: the tool, as the server names it
	Level    string  // for a log message: its severity, such as "info"
	Message  string  // the progress message, or the logged data as text
	Progress float64 // for progress: the progress so far
	Total    float64 // for progress: the total, 0 if unknown
}

// noticeSink carries the notices of a streamed run's tool calls to the
// goroutine that emits its events. Notices past its buffer are dropped
// rather than stall the MCP session that sent them.
type noticeSink struct{ ch chan Notice }

func (s *noticeSink) send(n Notice) {
	select {
	case s.ch <- n:
	default:
	}
}

type sinkKey struct{}

func sinkFrom(ctx context.Context) *noticeSink {
	s, _ := ctx.Value(sinkKey{}).(*noticeSink)
	return s
}
