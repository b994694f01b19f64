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
	EventLog                             // Notice is a message an MCP server logged for a call of the run (see [Notice])
	EventTurnEnd                         // the turn is over; Usage is its usage
	EventDone                            // the run is over; Result is set
	EventCompaction                      // Compaction says how the request about to be sent was shortened
	// EventPartial comes in a [StreamTyped] run, after the text that
	// completed more of the answer. [TypedEvent.Value] is the answer so far.
	EventPartial
	// EventToolCallDelta: Delta is a piece of the arguments of ToolCall. The
	// call is still arriving: it has its ID and Name, and Arguments is empty.
	// A UI can show the arguments as the model writes them. Once complete,
	// the call is run and reported by EventToolCall.
	EventToolCallDelta
	// EventAgent: Nested is an event of an agent that ToolCall runs, an agent
	// used as a tool ([Agent.AsTool], [AgentTool]). Nested is itself of kind
	// EventAgent for an agent that agent runs, and so on. See
	// [Event.Innermost].
	EventAgent
	// EventGuard: Guard is a guard's verdict ([WithGuards]), without the
	// text it judged.
	EventGuard
	// EventHandoff: Transfer is a handoff of the conversation from one
	// agent of a team to another ([WithHandoffs]). The events that follow
	// are the new agent's.
	EventHandoff
)

var eventNames = [...]string{"", "text", "reasoning", "tool-call", "tool-result", "progress", "log", "turn-end", "done",
	"compaction", "partial", "tool-call-delta", "agent", "guard", "handoff"}

// String returns the kind's name, such as "tool-call".
func (k EventKind) String() string {
	if k > 0 && int(k) < len(eventNames) {
		return eventNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// An Event is one step of a streamed run. Kind says which of the other fields
// are set. The pointers are nil for the kinds that do not carry them.
type Event struct {
	Kind       EventKind
	Turn       int           // the turn the event belongs to, from 1
	Delta      string        // EventText, EventReasoning, EventToolCallDelta
	ToolCall   *ToolCall     // EventToolCall, EventToolResult, EventToolCallDelta, EventAgent
	ToolResult *ToolResult   // EventToolResult
	Notice     *Notice       // EventProgress, EventLog
	Usage      *Usage        // EventTurnEnd
	Result     *Result       // EventDone
	Compaction *Compaction   // EventCompaction
	Nested     *Event        // EventAgent
	Guard      *GuardVerdict // EventGuard
	Transfer   *Transfer     // EventHandoff
	// Destructive, for EventToolCall: the tool called is
	// [Tool.Destructive], which a UI shows with the call.
	Destructive bool
	// Agent names, in a run of a team's root ([WithTeam]), the agent whose
	// step the event is: the one that holds the conversation as it happens.
	// It is empty for an agent without a team, and on EventDone.
	Agent string
}

// Innermost returns the event e carries: e itself unless it is of kind
// [EventAgent]. It also returns the calls of the agents used as tools it came
// through, outermost first. A UI renders the event under the last of them.
func (e Event) Innermost() (Event, []ToolCall) {
	var path []ToolCall
	for e.Kind == EventAgent && e.Nested != nil && e.ToolCall != nil {
		path = append(path, *e.ToolCall)
		e = *e.Nested
	}
	return e, path
}

// A Notice is a notification an MCP server sent about a call of one of its
// tools. It is progress, which names the call by its progress token, or a log
// message that came with the call. Only a streamable HTTP server's log
// messages can be told apart by call. Such a server sends them on the call's
// own response stream. Other servers' log messages go to the agent's logger
// only, since they could belong to another conversation. So do those an HTTP
// server sends outside any call's stream. Robby reads notices off the wire in
// order. So each notice of a call becomes an event before the call's result.
type Notice struct {
	Server   string
	Tool     string  // the tool called, as the server names it
	Level    string  // for a log message: its severity, such as "info"
	Message  string  // the progress message, or the logged data as text
	Progress float64 // for progress: the progress so far
	Total    float64 // for progress: the total, 0 if unknown
}

// eventSink carries the events of a streamed run's tool calls to the
// goroutine that emits the run's events. They are MCP servers' notices, and
// the events of agents used as tools. An agent's events wait for room, as its
// own stream would wait for its reader. So do the notices read on a call's
// own response stream (streamable HTTP), which hold up only that call.
// Notices read on a wire other calls share are dropped when there is no room
// (send). That way they do not stall those calls.
type eventSink struct{ ch chan Event }

// send sends n if there is room, and reports whether it did.
func (s *eventSink) send(n Notice) bool {
	select {
	case s.ch <- n.event():
		return true
	default:
		return false
	}
}

// Notify passes n on to the streamed run whose tool call ctx is the context
// of: a tool's function reports its progress so, as an MCP server's notices
// are reported, in an [EventProgress] event, or [EventLog] when n.Level is
// set. It waits for room, as the run's stream waits for its reader, until
// ctx ends. It reports whether n was passed on: it is not when nobody
// streams the run.
func Notify(ctx context.Context, n Notice) bool {
	s := sinkFrom(ctx)
	return s != nil && s.forward(ctx, n.event())
}

func (n Notice) event() Event {
	kind := EventProgress
	if n.Level != "" {
		kind = EventLog
	}
	return Event{Kind: kind, Notice: &n}
}

// forward sends e and reports whether it was sent. It gives up if ctx, the
// context of the tool call sending it, ends first.
func (s *eventSink) forward(ctx context.Context, e Event) bool {
	select {
	case s.ch <- e:
		return true
	case <-ctx.Done():
		return false
	}
}

// flush emits the events sent so far, in the turn turn. The events of a call
// are all sent before its result is ready. So flushing before emitting a
// result keeps them before it.
func (s *eventSink) flush(emit func(Event) bool, turn int) {
	for {
		select {
		case e := <-s.ch:
			e.Turn = turn
			emitEvent(emit, e)
		default:
			return
		}
	}
}

type sinkKey struct{}

func sinkFrom(ctx context.Context) *eventSink {
	s, _ := ctx.Value(sinkKey{}).(*eventSink)
	return s
}

// emitEvent sends e if someone listens, and reports whether they still do.
func emitEvent(emit func(Event) bool, e Event) bool {
	return emit == nil || emit(e)
}
