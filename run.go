package robby

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
)

// Run adds prompt to the conversation as a user message and runs the
// ReAct loop. It asks the model, runs the tools it calls, and gives it
// their results. It goes on until the model answers without calling a
// tool, or calls a caller-run tool ([WithCallerTools]). opts change this
// run only.
//
// Each turn is added to the conversation as a whole, once its tools have
// run. So the conversation never holds a tool call without its result,
// but for the calls a run ended on ([Result.Pending]). A run that fails
// before its first turn completes leaves the conversation as it was,
// prompt included. So it can be retried as it is.
//
// When the model still calls tools after [WithMaxTurns] turns, Run returns
// the partial result with an error wrapping [ErrMaxTurns]. When the run
// reached a limit of its [WithBudget], the error is a [*BudgetError].
// Errors from the endpoint are [*APIError] values. The result is never
// nil.
func (a *Agent) Run(ctx context.Context, prompt string, opts ...RunOption) (*Result, error) {
	return a.run(ctx, promptMessage(prompt), opts, nil)
}

// Resume runs the ReAct loop on the conversation as it is, adding no
// prompt. It continues a run that ended on calls of caller-run tools, with
// their results given by [WithToolResults]. Or it answers messages added
// with [Agent.AddMessages]. It is otherwise [Agent.Run].
func (a *Agent) Resume(ctx context.Context, opts ...RunOption) (*Result, error) {
	return a.run(ctx, messages{}, opts, nil)
}

// Stream is [Agent.Run] with every step reported as it happens. The steps
// are text and reasoning deltas, each tool call and its result, and the
// end of each turn.
// The last event is always of kind [EventDone] and carries the [Result],
// paired with the run's error, if any. Other events come with a nil error.
//
// Breaking out of the loop stops the run. The response is closed, running
// tools are cancelled, and the conversation keeps the turns that ended.
func (a *Agent) Stream(ctx context.Context, prompt string, opts ...RunOption) iter.Seq2[Event, error] {
	return a.stream(ctx, promptMessage(prompt), opts)
}

// ResumeStream is [Agent.Resume] streamed as [Agent.Stream] streams
// [Agent.Run].
func (a *Agent) ResumeStream(ctx context.Context, opts ...RunOption) iter.Seq2[Event, error] {
	return a.stream(ctx, messages{}, opts)
}

func (a *Agent) stream(ctx context.Context, prompt messages, opts []RunOption) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if ctx == nil {
			yield(Event{Kind: EventDone, Result: new(Result)}, ErrNilContext)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stopped := false
		emit := func(e Event) bool {
			if !stopped && !yield(e, nil) {
				stopped = true
				cancel()
			}
			return !stopped
		}
		res, err := a.run(ctx, prompt, opts, emit)
		if !stopped {
			yield(Event{Kind: EventDone, Turn: res.Turns, Result: res}, err)
		}
	}
}

// errStopped ends a stream whose consumer stopped listening.
var errStopped = errors.New("robby: stream consumer stopped")

// run is the loop behind Run and Resume (emit nil, plain requests) and
// their streamed forms. prompt is added with the first turn, after the
// results of the calls the conversation awaits.
func (a *Agent) run(ctx context.Context, prompt messages, opts []RunOption, emit func(Event) bool) (*Result, error) {
	rc, err := newRunConfig(opts)
	if err == nil && rc.typed != nil {
		return a.schemaRun(ctx, prompt, opts, rc.typed, emit)
	}
	if err != nil {
		return new(Result), err
	}
	release, err := a.acquire(ctx)
	if err != nil {
		return new(Result), err
	}
	defer release()
	if a.core.team != nil {
		res, err := a.runTeam(ctx, prompt, &rc, emit)
		return res, cmp.Or(err, rc.journal.wait())
	}
	ctx, op := a.core.tel.startRun(ctx, a.model(&rc), rc.tool)
	res, err := a.runHeld(a.core.metered(ctx, rc.spent()), prompt, &rc, emit)
	err = cmp.Or(err, rc.journal.wait()) // a write that runHeld started before its end
	op.end(ctx, res, err)
	res.Agent = a.core.name
	return res, err
}

// model returns the model a run asks for.
func (a *Agent) model(rc *runConfig) string {
	if rc.params != nil && rc.params.Model != "" {
		return rc.params.Model
	}
	return a.core.params.Model
}

// runHeld is run for a caller that holds the conversation already.
func (a *Agent) runHeld(ctx context.Context, prompt messages, rc *runConfig, emit func(Event) bool) (res *Result, err error) {
	res = new(Result)
	t, err := a.firstTurn(ctx, rc, emit)
	if err != nil {
		return res, err
	}
	load := func(ctx context.Context) error { return rc.journal.load(ctx, a, prompt, rc) }
	ctx, stop, err := a.guardInput(ctx, &t, &prompt, load)
	if err != nil {
		return res, err
	}
	defer stop()
	defer func() { err = rc.journal.end(ctx, err) }()
	if t.pending, err = a.opening(ctx, prompt, rc); err != nil {
		return res, err
	}
	for t.n = rc.turnsDone() + 1; ; t.n++ {
		if err := a.startTurn(ctx, &t); err != nil {
			return res, err
		}
		req, err := a.turnRequest(&t)
		if err != nil {
			return res, err
		}
		r, err := a.sendFitting(ctx, &t, req, t.deltas())
		err = a.guardReply(ctx, &t, r, err)
		if err := a.keepReply(ctx, res, t.n-rc.turnsDone(), r, err); err != nil {
			return res, err
		}
		// A run that pauses on the caller's calls drops the agent's own (splitCalls).
		calls, ext, paused := rc.splitCalls(r.toolCalls(), t.final)
		msg, raw := r.message(calls)
		t.pending.add(msg, raw)
		if err := t.journal.saveOne(ctx, msg, raw); err != nil {
			return res, err
		}
		if paused || len(calls) == 0 {
			a.commit(&t, res)
			if paused {
				res.Pending = ext
			}
			emitEvent(t.emit, Event{Kind: EventTurnEnd, Turn: t.n, Usage: &r.usage})
			return res, nil
		}
		if !t.final && !t.tools.rerunnable(calls) {
			if err := t.journal.wait(); err != nil {
				return res, err
			}
		}
		results, spent := a.runTools(ctx, &t, calls)
		res.Usage.add(spent)
		r.usage.add(spent) // the turn's usage counts the agents its tools ran
		res.ToolCalls = append(res.ToolCalls, results...)
		for _, r := range results {
			t.pending.add(toolMessage(r))
		}
		// Committed only now, after its tools: the conversation never holds
		// a call without its result. (The journal saved each message as it
		// came; loading finishes the calls a crash left unanswered.)
		a.commit(&t, res)
		if err := t.journal.failed(); err != nil {
			return res, err
		}
		if !emitEvent(t.emit, Event{Kind: EventTurnEnd, Turn: t.n, Usage: &r.usage}) || ctx.Err() != nil {
			return res, fmt.Errorf("run: %w", context.Cause(ctx))
		}
		if t.final {
			return res, fmt.Errorf("%w: %d turns, and the model still called tools", ErrMaxTurns, t.n)
		}
	}
}
