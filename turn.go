package robby

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/robby-go/robby/internal/chatwire"
	"github.com/robby-go/robby/internal/guardrail"
)

// One model turn of a run: its request, the reply, the tools the reply
// calls, and the commit. The loop itself is runHeld, in run.go; the call
// to the model is modelcall.go's.

// A turn is one model turn: one request, its reply, and the calls of the
// agent's tools the reply asks for. A run keeps one turn value and moves
// it on from turn to turn. [Agent.ChatCompletion] and
// [Agent.ToolsCompletion] make a request of a turn of their own, numbered
// 0, with no events and no run parts.
type turn struct {
	n       int              // its number in the run, WithOneTurn's earlier turns counted
	final   bool             // the last the turn limit allows (WithFinalAnswer)
	tools   *toolset         // the agent's tools, as the turn found them; nil offers none
	emit    func(Event) bool // the run's listener; nil when nobody listens
	journal *journal         // the run's stored conversation; nil if none
	guard   *turnGuard       // what the agent's guards keep: guard.go; nil for none
	// pending are the turn's messages. Its request sends them; the
	// conversation gets them when the turn is committed.
	pending messages

	// The run's own parts of each request: nil or empty for the agent's.
	head   []byte                          // the run's parameters, encoded
	params *openai.ChatCompletionNewParams // the run's parameters (WithRunParams, a typed answer's)
	model  string                          // the model the run asks for
	caller []json.RawMessage               // the caller's tools (WithCallerTools)
	system []json.RawMessage               // the run's system messages (WithRunSystem)
}

// firstTurn returns the turn value a run starts with, not numbered yet:
// the run's parts of each request and where its events go.
func (a *Agent) firstTurn(ctx context.Context, rc *runConfig, emit func(Event) bool) (turn, error) {
	t := turn{emit: emit, journal: rc.journal, model: a.model(rc), system: rc.system}
	var err error
	if t.head, t.params, err = a.runHead(rc, emit != nil); err != nil {
		return t, err
	}
	t.caller, err = rc.callerTools(a.core.tools.get(ctx))
	return t, err
}

// startTurn readies t, numbered already, for its request: whether it is
// the final turn, and the tools it offers. It reports why the run may not
// make the turn, if it may not.
func (a *Agent) startTurn(ctx context.Context, t *turn) error {
	if a.core.isClosed() {
		return ErrClosed
	}
	if t.n > a.core.maxTurns {
		return fmt.Errorf("%w: %d turns", ErrMaxTurns, a.core.maxTurns)
	}
	t.final = a.core.finalTurn && t.n == a.core.maxTurns
	t.tools = a.toolsFor(ctx, t.pending.list)
	a.guardTurn(ctx, t)
	return nil
}

// turnRequest builds the whole request of turn t, and is the one place a
// turn's request is made: the run's parameters, the conversation, the run's
// system messages, the turn's pending messages and the tools. Compaction
// (fit, in sendFitting) may then leave some of the conversation out.
func (a *Agent) turnRequest(t *turn) (*request, error) {
	history, lead, err := a.encodedHistory()
	if err != nil {
		return nil, err
	}
	req := &request{head: t.head, history: history, lead: lead, system: t.system, model: t.model, params: t.params}
	if req.pending, err = t.pending.encoded(); err != nil {
		return nil, err
	}
	// The final turn offers no tools, the caller's neither: the model
	// has to answer. Calls it makes all the same are not run (runTools).
	if !t.final && t.tools != nil {
		req.tools, req.caller = t.tools.raw, t.caller
	}
	return req, nil
}

// commit adds the turn's messages to the conversation and to res. It is
// called once the turn's tools have run. The next turn reuses the
// messages' memory: both copied them.
func (a *Agent) commit(t *turn, res *Result) {
	a.addMessages(t.pending)
	res.Messages = append(res.Messages, t.pending.list...)
	t.pending = messages{list: t.pending.list[:0], raw: t.pending.raw[:0]}
}

// runHead returns the head and parameters of a run's requests. It returns
// nil for the agent's own, else the run's (a typed answer's or WithParams').
func (a *Agent) runHead(rc *runConfig, stream bool) ([]byte, *openai.ChatCompletionNewParams, error) {
	switch {
	case rc.format != nil:
		return a.core.typedHeads.get(rc.format, &a.core.params, stream)
	case rc.params != nil:
		p, err := overlayParams(&a.core.params, rc.params)
		if err != nil {
			return nil, &p, err
		}
		head, err := chatwire.EncodeHead(&p, stream)
		return head, &p, err
	}
	return nil, nil, nil
}

// opening returns the messages a run starts with: the answers to the calls
// the conversation awaits, then the prompt. It saves them to the run's
// journal.
func (a *Agent) opening(ctx context.Context, prompt messages, rc *runConfig) (messages, error) {
	answers, err := rc.answers(a.awaiting(), a.core.tools.policy.maxOutput)
	if err != nil {
		return messages{}, err
	}
	var pending messages
	for _, r := range answers {
		pending.add(toolMessage(r))
	}
	pending.addAll(prompt)
	return pending, rc.journal.save(ctx, pending)
}

// keepReply records a turn's reply in res: the run's turns so far, the
// reply's text, usage and model. It returns the run's error if the call
// failed.
func (a *Agent) keepReply(ctx context.Context, res *Result, turns int, r *reply, err error) error {
	if r != nil || !errors.Is(err, ErrBudget) {
		res.Turns = turns // a call the budget refused was not made
	}
	if r != nil {
		res.Text, res.Reasoning = r.text.String(), r.reasoning.String()
	}
	if err != nil {
		if errors.Is(err, errStopped) || ctx.Err() != nil {
			return fmt.Errorf("run: %w", context.Cause(ctx))
		}
		return err
	}
	res.Usage.add(r.usage)
	if res.Models == nil {
		res.Models = make([]string, 0, min(a.core.maxTurns, 8))
	}
	res.Models = append(res.Models, r.model)
	return nil
}

// deltas returns what turns the turn's streamed deltas into events. It
// returns nil for a plain request when nobody listens.
func (t *turn) deltas() deltaFunc {
	if t.emit == nil {
		return nil
	}
	turn, emit, tg := t.n, t.emit, t.guard
	return func(d *delta) error {
		text := d.text
		if tg != nil && text != "" {
			var err error
			if text, err = tg.text(text, emit); err != nil {
				return err
			}
		}
		// Reasoning is not guarded: a guarded run does not stream it.
		if d.reasoning != "" && tg == nil && !emit(Event{Kind: EventReasoning, Turn: turn, Delta: d.reasoning}) {
			return errStopped
		}
		if text != "" && !emit(Event{Kind: EventText, Turn: turn, Delta: text}) {
			return errStopped
		}
		for _, ad := range d.args {
			if tg != nil && tg.holds(ad.call.name) {
				continue
			}
			if !emit(Event{Kind: EventToolCallDelta, Turn: turn, ToolCall: ad.call.shown(), Delta: ad.fragment}) {
				return errStopped
			}
		}
		return nil
	}
}

// runTools runs the calls of turn t. It reports each call, and each
// result as soon as it is known. It returns the results with the usage of
// the agents the tools ran. On the final turn no tool is offered, so no
// call is run.
//
// Each result is saved to the run's stored conversation, if any, as soon as
// it is known.
func (a *Agent) runTools(ctx context.Context, t *turn, calls []ToolCall) ([]ToolResult, Usage) {
	ts, turn, emit, j := t.tools, t.n, t.emit, t.journal
	if blocked := a.guardCalls(ctx, t.emit, calls); blocked != nil {
		ctx = context.WithValue(ctx, blockedKey{}, blocked)
	}
	if emit != nil { // the event's copy of each call is an allocation
		for _, c := range calls {
			emitEvent(emit, Event{Kind: EventToolCall, Turn: turn, ToolCall: &c, Destructive: ts.destructive(c.Name)})
		}
	}
	results := make([]ToolResult, len(calls))
	if t.final {
		for i, c := range calls {
			results[i].Call = c
			results[i].finish(fmt.Errorf("%w: call not run, the turn limit was reached", ErrMaxTurns), 0, nil, i)
			j.saveResult(ctx, results[i])
		}
		return results, Usage{}
	}
	spent := &agentUsage{caller: a}
	ctx = context.WithValue(ctx, agentUsageKey{}, spent)
	if emit == nil && j == nil {
		a.execute(ctx, ts, calls, results, nil)
		return results, spent.total()
	}
	done := make(chan int, len(calls))
	sink := &eventSink{ch: make(chan Event, 64)}
	if emit != nil {
		ctx = context.WithValue(ctx, sinkKey{}, sink)
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		a.execute(ctx, ts, calls, results, done)
	}()
	for left := len(calls); left > 0; {
		select {
		case i := <-done:
			left--
			sink.flush(emit, turn)
			j.saveResult(ctx, results[i])
			emitEvent(emit, Event{Kind: EventToolResult, Turn: turn, ToolCall: &results[i].Call, ToolResult: &results[i]})
		case e := <-sink.ch:
			e.Turn = turn
			emitEvent(emit, e)
		}
	}
	<-finished
	return results, spent.total()
}

// A turnGuard is what a run's guards keep from turn to turn.
type turnGuard struct {
	gate      *guardrail.Gate // the input guards beside the first request; nil once passed
	events    []Event         // the gate's verdicts
	gs        *guardSet
	out       *guardrail.Output
	holder    *guardrail.Holder     // nil without output guards
	reds      []*guardrail.Redactor // the holder's
	redactors []*guard              // the guards of reds, in order
}

// guardTurn readies turn t's guards, if the agent has any: what its
// streamed text passes before it is emitted.
func (a *Agent) guardTurn(ctx context.Context, t *turn) {
	gs := a.core.guards
	if gs == nil {
		return
	}
	tg := cmp.Or(t.guard, &turnGuard{})
	t.guard, tg.gs, tg.holder, tg.reds, tg.redactors = tg, gs, nil, nil, nil
	var others []*guard
	hold := guardrail.HoldNone
	for _, g := range gs.by[GuardOutput] {
		switch {
		case g.Pattern != nil && g.Action == Redact:
			tg.reds = append(tg.reds, guardrail.NewRedactor(g.Pattern, g.Replacement, g.window))
			tg.redactors = append(tg.redactors, g)
		case g.Paragraphs && hold != guardrail.HoldWhole:
			others, hold = append(others, g), guardrail.HoldParagraphs
		default:
			others, hold = append(others, g), guardrail.HoldWhole
		}
	}
	if len(gs.by[GuardOutput]) > 0 {
		tg.holder = guardrail.NewHolder(tg.reds, hold, func(text string) (string, error) {
			return gs.check(ctx, others, Guarded{Boundary: GuardOutput, Text: text}, t.emit)
		})
	}
	tg.out = guardrail.NewOutput(tg.holder, tg.gate)
}

// text passes a piece of streamed text through the turn's guards and
// returns what may be emitted, after the verdicts of the input guards
// beside the request, once they passed.
func (tg *turnGuard) text(text string, emit func(Event) bool) (string, error) {
	text, err := tg.out.Write(text)
	if text != "" {
		tg.passed(emit)
	}
	return text, err
}

// passed emits the verdicts of the input guards beside the request, once.
func (tg *turnGuard) passed(emit func(Event) bool) {
	for _, e := range tg.events {
		emitEvent(emit, e)
	}
	tg.events, tg.gate = nil, nil
}

// holds reports whether the argument deltas of a call of name are held
// back: a tool-call guard checks it, or the input guards have not passed.
func (tg *turnGuard) holds(name string) bool {
	return tg.gate != nil || len(tg.gs.on(GuardToolCall, name)) > 0
}

// guardReply passes turn t's reply r through the output guards once it
// all arrived: what they held back, or all of a reply not streamed. It
// waits for the input guards beside the request. r keeps the text that
// passed. It returns err, or the guards' block.
func (a *Agent) guardReply(ctx context.Context, t *turn, r *reply, err error) error {
	tg := t.guard
	if tg == nil || r == nil {
		return err
	}
	var rest string
	if err == nil && t.emit == nil {
		_, err = tg.out.Write(r.text.String())
	}
	if err == nil {
		rest, err = tg.out.Close()
	}
	if err == nil {
		tg.passed(t.emit)
		for i, g := range tg.redactors {
			v := &GuardVerdict{Guard: g.Name, Boundary: GuardOutput}
			if n := tg.reds[i].Count(); n > 0 {
				v.Action, v.Reason = Redact, fmt.Sprintf("%d matches of its pattern", n)
			}
			tg.gs.record(ctx, v, t.emit)
		}
		if rest != "" && !emitEvent(t.emit, Event{Kind: EventText, Turn: t.n, Delta: rest}) {
			err = errStopped
		}
	}
	if tg.holder != nil {
		r.text.Reset()
		r.text.WriteString(tg.holder.Released())
	}
	return err
}
