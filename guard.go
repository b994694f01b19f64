package robby

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/robby-go/robby/internal/guardrail"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// A Boundary is where a [Guard] checks what crosses it.
type Boundary int

// The boundaries, in the order a run crosses them.
const (
	// GuardInput is the user's messages a run answers: its prompt, or the
	// user messages that end the conversation ([Agent.Resume]).
	GuardInput Boundary = iota + 1
	// GuardToolCall is a call's arguments, before the tool runs.
	GuardToolCall
	// GuardToolResult is a tool's output, before the model reads it.
	GuardToolResult
	// GuardOutput is the model's text, before the caller or a client reads
	// it: events, [Result.Text] and the conversation.
	GuardOutput
)

// String returns the boundary's name, such as "tool_call".
func (b Boundary) String() string {
	return name(b, "", "input", "tool_call", "tool_result", "output")
}

// name returns names[v], or v's type and number if it has none.
func name[T ~int](v T, names ...string) string {
	if v >= 0 && int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return fmt.Sprintf("%T(%d)", v, int(v))
}

// A GuardAction is what a [Verdict] does with the text it judged.
type GuardAction int

// The actions. The zero value allows.
const (
	Allow  GuardAction = iota // the text goes on as it is
	Block                     // the text goes no further: see [GuardError]
	Redact                    // the text goes on as [Verdict.Text] says
)

// String returns "allow", "block" or "redact".
func (a GuardAction) String() string { return name(a, "allow", "block", "redact") }

// A Verdict is a guard's decision on one text.
type Verdict struct {
	Action GuardAction
	Text   string // Redact: the text to use instead
	// Reason says why, for errors, events and logs. It must not quote the
	// text judged: what a guard withholds is never shown.
	Reason string
}

// Guarded is what a [GuardFunc] judges.
type Guarded struct {
	Boundary Boundary
	// Text is a user message's text, a call's arguments (JSON), a tool's
	// output, or the answer (a paragraph of it, with [Guard.Paragraphs]).
	Text string
	Call *ToolCall // the call, at the tool boundaries
}

// A GuardFunc judges a text. An error blocks it, with the error as the
// reason: a guard fails closed. So do a panic and a timeout. It may be
// called concurrently.
type GuardFunc func(ctx context.Context, in Guarded) (Verdict, error)

// A Judge is a guard that asks a model: its rubric is the system message,
// the text the user message. The answer must be one word, BlockIf or
// AllowIf, in any case, spaces, quotes and a final period aside. Anything
// else, an error or a timeout blocks, with the reason. A judge's calls are
// not counted in the run's usage or budget.
type Judge struct {
	Rubric  string
	Model   string // the model asked; "" for the agent's
	BlockIf string // the answer that blocks, such as "no"
	AllowIf string // the answer that allows; "" for the opposite of "yes" or "no"
	// Client is the endpoint that serves Model; nil for the agent's (its
	// request options too).
	Client *openai.Client
}

// DefaultGuardTimeout bounds a [GuardFunc] or a [Judge] whose guard sets
// no Timeout.
const DefaultGuardTimeout = 30 * time.Second

// A Guard checks what crosses one [Boundary] and allows it, blocks it, or
// redacts spans of it. It is a [GuardFunc] (Check), a [Judge], or a
// Pattern, exactly one. See docs/GUARDS.md for what each boundary
// guarantees, in a stream too, and what it costs.
type Guard struct {
	Name string // in errors, events and logs; "" for "<boundary>#<n>"
	On   Boundary
	// Tool, at the tool boundaries, is a pattern of the names of the tools
	// guarded, as [path.Match] reads it, such as "shell*"; "" for all.
	Tool string
	// What it is: one of these.
	Check GuardFunc
	Judge *Judge
	// Pattern's matches are blocked, or replaced by Replacement (default
	// "[redacted]"), as Action says.
	Pattern     *regexp.Regexp
	Action      GuardAction
	Replacement string
	// MaxMatch bounds the bytes of a match of a Pattern whose matches have
	// no bound (a *, + or {n,}), default 1024. A streamed output holds back
	// that many bytes from where a match could start: a bounded pattern's
	// longest match. A match still growing past it is redacted up to there.
	MaxMatch int
	// Message is what the model reads of a blocked tool call or result,
	// and what an endpoint's client reads of a blocked run.
	Message string
	Timeout time.Duration // Check and Judge; default DefaultGuardTimeout
	// Paragraphs has a Check, Judge or blocking Pattern on the output judge
	// each paragraph as it ends (at a blank line), rather than the whole
	// answer: a streamed answer then waits for a paragraph, not for its end.
	Paragraphs bool
	// Beside has an input guard run beside the run's first model request,
	// rather than before it. The request is cancelled when it blocks; no
	// text or call of the reply goes anywhere before it allowed. Only a
	// blocking guard may run beside: a redaction must come first.
	Beside bool
}

// ErrGuardBlocked is matched by every [*GuardError].
var ErrGuardBlocked = errors.New("robby: blocked by a guard")

// A GuardError is a guard's block: it names the guard, the boundary and,
// at the tool boundaries, the tool. A run whose input or output a guard
// blocks ends with it. A blocked tool call or result is the call's error,
// which the model reads, and the run goes on.
type GuardError struct {
	Guard    string
	Boundary Boundary
	Tool     string // the tool, at the tool boundaries
	Reason   string // why, without the text withheld
	Message  string // the guard's Message, if any
}

// Error says which guard blocked what, why, and the guard's message.
func (e *GuardError) Error() string {
	s := fmt.Sprintf("robby: guard %q blocked the %s", e.Guard, e.Boundary)
	if e.Tool != "" {
		s += fmt.Sprintf(" of %q", e.Tool)
	}
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Is reports whether target is [ErrGuardBlocked].
func (e *GuardError) Is(target error) bool { return target == ErrGuardBlocked }

// A GuardVerdict is the verdict an [EventGuard] reports: never the text.
type GuardVerdict struct {
	Guard, Tool, Reason string // as in a GuardError
	Boundary            Boundary
	Action              GuardAction
}

// WithGuards adds guards, checked in the order given at their boundary.
// Each is checked here: its kind, its pattern's bound, its boundary.
func WithGuards(guards ...Guard) Option {
	return func(c *config) error {
		for _, g := range guards {
			c.guards = cmp.Or(c.guards, new(guardSet))
			if err := c.guards.add(g); err != nil {
				return err
			}
		}
		return nil
	}
}

// A guardSet is the agent's guards, ready to run. It is immutable once
// New returns it.
type guardSet struct {
	by   [GuardOutput + 1][]*guard
	core *core // its client serves the judges; set by New
}

// A guard is a Guard checked, with its pattern's window.
type guard struct {
	Guard
	window int
}

func (gs *guardSet) add(g Guard) error {
	n := len(slices.DeleteFunc([]bool{g.Check != nil, g.Judge != nil, g.Pattern != nil}, func(set bool) bool { return !set }))
	if g.On < GuardInput || g.On > GuardOutput {
		return fmt.Errorf("robby: WithGuards: guard %q: no boundary (On)", g.Name)
	}
	if g.Name == "" {
		g.Name = fmt.Sprintf("%s#%d", g.On, len(gs.by[g.On])+1)
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("robby: WithGuards: guard %q: "+format, append([]any{g.Name}, args...)...)
	}
	if _, err := path.Match(g.Tool, ""); err != nil {
		return fail("Tool %q: %v", g.Tool, err)
	}
	x := &guard{Guard: g}
	switch {
	case n != 1:
		return fail("give one of Check, Judge and Pattern, not %d", n)
	case g.Judge != nil && (g.Judge.Rubric == "" || g.Judge.BlockIf == ""):
		return fail("a Judge needs a Rubric and BlockIf")
	case g.Judge != nil && g.Judge.AllowIf == "" && guardrail.Opposite(g.Judge.BlockIf) == "":
		return fail("a Judge that blocks on %q needs AllowIf", g.Judge.BlockIf)
	case g.Beside && (g.On != GuardInput || g.Pattern != nil && g.Action != Block):
		return fail("only an input guard that blocks may run Beside the request")
	case g.Pattern != nil && g.Action != Block && g.Action != Redact:
		return fail("a Pattern's Action is Block or Redact")
	case g.Pattern != nil && g.On == GuardOutput && guardrail.AnchorsStart(g.Pattern):
		return fail("an output Pattern may not anchor at the text's start (\\A, or ^ outside (?m)): a stream has none")
	case g.Pattern != nil:
		var err error
		if x.window, err = guardrail.Window(g.Pattern, cmp.Or(g.MaxMatch, 1024)); err != nil {
			return fail("%v", err)
		}
		if x.Replacement == "" {
			x.Replacement = "[redacted]"
		}
	}
	if g.Judge != nil && g.Judge.AllowIf == "" {
		j := *g.Judge
		j.AllowIf = guardrail.Opposite(j.BlockIf)
		x.Judge = &j
	}
	x.Timeout = cmp.Or(g.Timeout, DefaultGuardTimeout)
	gs.by[g.On] = append(gs.by[g.On], x)
	return nil
}

// on returns the guards of boundary b that apply to tool (any: "").
func (gs *guardSet) on(b Boundary, tool string) []*guard {
	if gs == nil {
		return nil
	}
	var on []*guard
	for _, g := range gs.by[b] {
		if ok, _ := path.Match(g.Tool, tool); g.Tool == "" || ok {
			on = append(on, g)
		}
	}
	return on
}

// check runs the guards gs in order on text, at in's boundary. It returns
// the text as they leave it, or a [*GuardError]. Each verdict is reported
// to emit (nil: nobody listens), the span of ctx and the log.
func (gs *guardSet) check(ctx context.Context, guards []*guard, in Guarded, emit func(Event) bool) (string, error) {
	tool := ""
	if in.Call != nil {
		tool = in.Call.Name
	}
	for _, g := range guards {
		v := g.verdict(ctx, gs.core, in)
		gs.record(ctx, &GuardVerdict{Guard: g.Name, Boundary: in.Boundary, Tool: tool, Action: v.Action, Reason: v.Reason}, emit)
		switch v.Action {
		case Block:
			return "", &GuardError{Guard: g.Name, Boundary: in.Boundary, Tool: tool, Reason: v.Reason, Message: g.Message}
		case Redact:
			in.Text = v.Text
		}
	}
	return in.Text, nil
}

// verdict is g's verdict on in: a failure of any kind blocks.
func (g *guard) verdict(ctx context.Context, c *core, in Guarded) Verdict {
	if g.Pattern != nil {
		if !g.Pattern.MatchString(in.Text) {
			return Verdict{}
		}
		if g.Action == Block {
			return Verdict{Action: Block, Reason: "matched its pattern"}
		}
		return Verdict{Action: Redact, Text: g.Pattern.ReplaceAllLiteralString(in.Text, g.Replacement), Reason: "matched its pattern"}
	}
	v, failed := guardrail.Run(ctx, g.Timeout, func(ctx context.Context) (Verdict, error) {
		if g.Judge != nil {
			return g.judge(ctx, c, in.Text)
		}
		return g.Check(ctx, in)
	})
	switch {
	case failed != "":
		return Verdict{Action: Block, Reason: c.secrets.redact(failed)}
	case v.Action < Allow || v.Action > Redact:
		return Verdict{Action: Block, Reason: fmt.Sprintf("unknown verdict %v", v.Action)}
	}
	return v
}

// judge asks g's judge about text.
func (g *guard) judge(ctx context.Context, c *core, text string) (Verdict, error) {
	j := g.Judge
	client, opts := c.client, c.reqOpts
	if j.Client != nil {
		client, opts = *j.Client, nil
	}
	post := func(ctx context.Context, body []byte) (raw []byte, err error) {
		return raw, client.Post(ctx, "chat/completions", bytes.NewReader(body), &raw, opts...)
	}
	block, err := guardrail.Ask(ctx, post, cmp.Or(j.Model, c.params.Model), j.Rubric, text, j.BlockIf, j.AllowIf)
	if err != nil || !block {
		return Verdict{}, err
	}
	return Verdict{Action: Block, Reason: fmt.Sprintf("the judge answered %q", j.BlockIf)}, nil
}

// record reports a verdict: an event, a span event with its attributes,
// a log line. None holds the text judged.
func (gs *guardSet) record(ctx context.Context, gv *GuardVerdict, emit func(Event) bool) {
	emitEvent(emit, Event{Kind: EventGuard, Guard: gv})
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("robby.guard", trace.WithAttributes(attribute.String("robby.guard.name", gv.Guard),
			attribute.String("robby.guard.boundary", gv.Boundary.String()), attribute.String("robby.guard.verdict", gv.Action.String())))
		if gv.Action == Block {
			span.SetAttributes(attribute.String("robby.guard.blocked", gv.Guard))
		}
	}
	guardrail.Log(ctx, gs.core.log, gv.Guard, gv.Boundary.String(), gv.Tool, gv.Action.String(), gv.Reason)
}

// guardInput checks the user's messages a run answers: prompt's, or those
// that end the conversation. It loads the stored conversation (load) after
// a prompt's check, so that no store holds what it redacted. The guards
// beside the first request run on a gate of t, under the context returned,
// which they cancel when they block. stop ends them if the run ends first.
func (a *Agent) guardInput(ctx context.Context, t *turn, prompt *messages, load func(context.Context) error) (_ context.Context, stop func(), err error) {
	gs := a.core.guards
	stop = func() {}
	if guarded := len(gs.on(GuardInput, "")) > 0; !guarded || prompt.list == nil {
		if err := load(ctx); err != nil || !guarded {
			return ctx, stop, err
		}
		load = func(context.Context) error { return nil } // the conversation's messages are checked once loaded
	}
	before := slices.DeleteFunc(slices.Clone(gs.by[GuardInput]), func(g *guard) bool { return g.Beside })
	beside := slices.DeleteFunc(slices.Clone(gs.by[GuardInput]), func(g *guard) bool { return !g.Beside })
	conv := a.Messages()
	from := len(conv)
	for prompt.list == nil && from > 0 && conv[from-1].OfUser != nil {
		from--
	}
	msgs := slices.Concat(conv[from:], prompt.list)
	texts := make([]string, len(msgs))
	for i, m := range msgs {
		in := Guarded{Boundary: GuardInput, Text: userText(m.OfUser)}
		if texts[i], err = gs.check(ctx, before, in, t.emit); err != nil {
			return ctx, stop, err
		}
		if texts[i] != in.Text {
			a.redactInput(prompt, from, i, texts[i])
		}
	}
	if err := load(ctx); err != nil || len(beside) == 0 {
		return ctx, stop, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	tg := &turnGuard{}
	keep := func(e Event) bool { tg.events = append(tg.events, e); return true }
	tg.gate = guardrail.NewGate(func() error {
		for _, text := range texts {
			// The run's goroutine emits its events once it passed.
			if _, err := gs.check(ctx, beside, Guarded{Boundary: GuardInput, Text: text}, keep); err != nil {
				cancel(err)
				return err
			}
		}
		return nil
	})
	t.guard = tg
	return ctx, func() { cancel(nil) }, nil
}

// guardCalls checks calls with the tool-call guards, reporting their
// verdicts to emit (nil: nobody listens). It redacts their arguments in
// place and returns the errors of those blocked, by ID; nil if none is.
func (a *Agent) guardCalls(ctx context.Context, emit func(Event) bool, calls []ToolCall) map[string]error {
	var blocked map[string]error
	for i := range calls {
		c := &calls[i]
		guards := a.core.guards.on(GuardToolCall, c.Name)
		if len(guards) == 0 {
			continue
		}
		args, err := a.core.guards.check(ctx, guards, Guarded{Boundary: GuardToolCall, Text: c.Arguments, Call: c}, emit)
		if err != nil {
			if blocked == nil {
				blocked = make(map[string]error)
			}
			blocked[c.ID], args = err, "" // withheld from the events too
		}
		c.Arguments = args
	}
	return blocked
}

type blockedKey struct{}

// blockedCall returns the error of a call a tool-call guard blocked.
func blockedCall(ctx context.Context, id string) error {
	blocked, _ := ctx.Value(blockedKey{}).(map[string]error)
	return blocked[id]
}

// guardResult checks the output of call with the tool-result guards.
func (gs *guardSet) guardResult(ctx context.Context, call ToolCall, out any) (any, error) {
	guards := gs.on(GuardToolResult, call.Name)
	if len(guards) == 0 {
		return out, nil
	}
	text, err := encodeResult(out)
	if err != nil {
		return nil, err
	}
	var emit func(Event) bool
	if sink := sinkFrom(ctx); sink != nil {
		emit = func(e Event) bool { return sink.forward(ctx, e) }
	}
	return gs.check(ctx, guards, Guarded{Boundary: GuardToolResult, Text: text, Call: &call}, emit)
}
