package robby

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/openai/openai-go/v3"
	"github.com/robby-go/robby/internal/chatwire"
)

// canTurn reports why the run may not make turn, if it may not.
func (a *Agent) canTurn(turn int) error {
	if a.core.isClosed() {
		return ErrClosed
	}
	if turn > a.core.maxTurns {
		return fmt.Errorf("%w: %d turns", ErrMaxTurns, a.core.maxTurns)
	}
	return nil
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

// keepReply records a turn's reply in res: its turn, text, usage and
// model. It returns the run's error if the call failed.
func (a *Agent) keepReply(ctx context.Context, res *Result, rc *runConfig, turn int, r *reply, err error) error {
	if r != nil || !errors.Is(err, ErrBudget) {
		res.Turns = turn - rc.turnsDone() // a call the budget refused was not made
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

// splitCalls returns the calls to answer in this turn, those the caller
// runs (ext), and whether the run pauses for them.
func (rc *runConfig) splitCalls(calls []ToolCall, final bool) (run, ext []ToolCall, paused bool) {
	if len(rc.caller) == 0 && rc.step == nil {
		return calls, nil, false // the usual run: the agent runs every call
	}
	ext = slices.DeleteFunc(slices.Clone(calls), func(c ToolCall) bool { return !rc.isCaller(c) })
	if rc.step != nil && len(ext) == 0 {
		ext = calls // the caller runs the agent's own tools too
	}
	paused = len(ext) > 0 && !final
	if paused {
		// The caller runs these: the run ends with them unanswered.
		// Calls of the agent's own tools in the same turn are left
		// out. The model will ask again once it has the results.
		return ext, ext, true
	}
	return calls, ext, false
}

// deltaEmitter turns streamed deltas into events. It returns nil for a
// plain request when nobody listens.
func (a *Agent) deltaEmitter(turn int, emit func(Event) bool) deltaFunc {
	if emit == nil {
		return nil
	}
	return func(d *delta) error {
		if d.reasoning != "" && !emit(Event{Kind: EventReasoning, Turn: turn, Delta: d.reasoning}) {
			return errStopped
		}
		if d.text != "" && !emit(Event{Kind: EventText, Turn: turn, Delta: d.text}) {
			return errStopped
		}
		for _, ad := range d.args {
			if !emit(Event{Kind: EventToolCallDelta, Turn: turn, ToolCall: ad.call.shown(), Delta: ad.fragment}) {
				return errStopped
			}
		}
		return nil
	}
}

// runTools runs the calls of one turn. It reports each call, and each
// result as soon as it is known. It returns the results with the usage of
// the agents the tools ran. On the final turn no tool is offered, so no
// call is run.
//
// Each result is saved to the run's stored conversation, if any, as soon as
// it is known.
func (a *Agent) runTools(ctx context.Context, ts *toolset, turn int, calls []ToolCall, final bool, emit func(Event) bool, j *journal) ([]ToolResult, Usage) {
	if emit != nil { // the event's copy of each call is an allocation
		for _, c := range calls {
			emitEvent(emit, Event{Kind: EventToolCall, Turn: turn, ToolCall: &c})
		}
	}
	results := make([]ToolResult, len(calls))
	if final {
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
