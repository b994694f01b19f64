package robby

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"time"
)

// ExecuteToolCalls runs calls concurrently, at most
// [WithMaxToolCallsPerTurn] of them. It adds one tool message per call to
// the conversation, in the order of calls. A failing, unknown, panicking or
// timed-out tool gives an error result that the model will read. The error
// returned is only that of ctx. A deferred tool ([Tool.Deferred]) runs
// whether a search found it or not: the program chose the calls. The
// guards check the calls and their results as in a run: a blocked call
// does not run, and its result is the [*GuardError].
func (a *Agent) ExecuteToolCalls(ctx context.Context, calls []ToolCall) ([]ToolResult, error) {
	release, err := a.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	if gs := a.core.guards; gs != nil && len(gs.by[GuardToolCall]) > 0 {
		calls = slices.Clone(calls) // guardCalls redacts in place
		if blocked := a.guardCalls(ctx, nil, calls); blocked != nil {
			ctx = context.WithValue(ctx, blockedKey{}, blocked)
		}
	}
	results := make([]ToolResult, len(calls))
	ctx = context.WithValue(ctx, agentUsageKey{}, &agentUsage{caller: a})
	a.execute(ctx, a.core.tools.get(ctx).programs(), calls, results, nil)
	var ms messages
	for _, r := range results {
		ms.add(toolMessage(r))
	}
	a.addMessages(ms)
	if err := ctx.Err(); err != nil {
		return results, fmt.Errorf("executing tool calls: %w", context.Cause(ctx))
	}
	return results, nil
}

// execute runs the calls of one turn into results and logs their outcome.
// If done is not nil, the index of each result is sent on it when the
// result is ready.
func (a *Agent) execute(ctx context.Context, ts *toolset, calls []ToolCall, results []ToolResult, done chan<- int) {
	ts.execute(ctx, calls, results, done)
	if !a.core.log.Enabled(ctx, slog.LevelDebug) {
		return // building the attributes costs four allocations a call
	}
	for _, r := range results {
		a.core.log.DebugContext(ctx, "robby: tool call", slog.String("tool", r.Call.Name),
			slog.String("id", r.Call.ID), slog.Duration("duration", r.Duration), slog.Any("error", r.Err))
	}
}

// execute runs calls concurrently, at most ts.limit of them, and fills
// results in call order. The calls past the limit get ErrToolLimit. If
// done is not nil, the index of each result is sent on it once it is
// ready.
//
// The calls of a turn start together, so one deadline bounds them all. A
// tool still running when the deadline or ctx ends is abandoned with an
// error result. Its goroutine ends when the tool function returns.
func (ts *toolset) execute(ctx context.Context, calls []ToolCall, results []ToolResult, done chan<- int) {
	run := min(len(calls), ts.limit)
	for i := range calls {
		results[i].Call = calls[i]
		if i >= run {
			results[i].finish(fmt.Errorf("%w: call not run, the limit is %d calls a turn", ErrToolLimit, ts.limit), 0, done, i)
		}
	}
	if run == 0 {
		return
	}
	if ts.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, ts.timeout, toolTimeout(ts.timeout))
		defer cancel()
	}
	type outcome struct {
		i   int
		out any
		err error
	}
	start := time.Now()
	ops := ts.tel.startTools(ctx, ts, calls[:run])
	ended := make([]bool, run)
	record := func(o outcome) {
		if o.err != nil && ctx.Err() != nil {
			o.err = fmt.Errorf("tool %q: %w", calls[o.i].Name, context.Cause(ctx)) // say which bound
		}
		ended[o.i] = true
		results[o.i].Duration = time.Since(start)
		if o.err == nil {
			results[o.i].Output, o.err = encodeResult(o.out)
		}
		results[o.i].finish(o.err, ts.maxOutput, done, o.i)
		ops.end(ctx, o.i, &results[o.i])
	}
	ch := make(chan outcome, run) // never blocks an abandoned tool
	left := 0
	for i := range run {
		t, inv, err := ts.prepare(calls[i])
		if ts.guards != nil {
			err = cmp.Or(blockedCall(ctx, calls[i].ID), err) // not run, whatever its arguments
		}
		switch {
		case err != nil:
			record(outcome{i: i, err: err})
		case run == 1 && t.honorsContext:
			// Nothing to abandon: call it here and spare a goroutine.
			out, err := ts.invoke(ops.context(ctx, i), t, calls[i], inv)
			record(outcome{i, out, err})
		default:
			left++
			go func() {
				out, err := ts.invoke(ops.context(ctx, i), t, calls[i], inv)
				ch <- outcome{i, out, err}
			}()
		}
	}
	for ; left > 0; left-- {
		select {
		case o := <-ch:
			record(o)
		case <-ctx.Done():
			for ; left > 0 && len(ch) > 0; left-- { // finished in time after all: keep their work
				record(<-ch)
			}
			for i := range run {
				if !ended[i] {
					record(outcome{i: i, err: errAbandoned})
				}
			}
			return
		}
	}
}

// errAbandoned stands for the error of a tool that did not return in time.
// record replaces it with the bound that ended it.
var errAbandoned = errors.New("abandoned")

// prepare finds a call's tool, checks its arguments and decodes them. It
// runs on the caller's goroutine, whose stack has grown already. The
// schema validator and the decoder are deep. Growing a fresh goroutine's
// stack for them cost more than the work itself.
func (ts *toolset) prepare(call ToolCall) (*Tool, invocation, error) {
	t, run, err := ts.bind(call)
	if err != nil && t != nil {
		err = fmt.Errorf("tool %q: %w", call.Name, err)
	}
	return t, run, err
}

// bind is prepare with errors that do not name the tool.
func (ts *toolset) bind(call ToolCall) (*Tool, invocation, error) {
	t := ts.byName[call.Name]
	if t == nil || t.deferred && !ts.all && !ts.found[call.Name] {
		return nil, nil, ts.notOffered(call.Name, t != nil)
	}
	args := t.dropNulls(json.RawMessage(call.Arguments))
	if err := t.validate(args); err != nil {
		return t, nil, err
	}
	run, err := t.bind(args)
	return t, run, err
}

// invoke runs a prepared call through the middleware, approval first,
// recovering a panic of any of them. When no middleware needs the result
// as text, the caller encodes it, for the same reason.
func (ts *toolset) invoke(ctx context.Context, t *Tool, call ToolCall, run invocation) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			ts.log.ErrorContext(ctx, "robby: tool panicked", slog.String("tool", call.Name),
				slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
			out, err = nil, fmt.Errorf("tool %q: %w: %v", call.Name, ErrToolPanic, p)
		}
	}()
	if sinkFrom(ctx) != nil {
		ctx = context.WithValue(ctx, callKey{}, call) // an agent tool labels its events with it
	}
	if ts.middleware != nil {
		ctx = context.WithValue(ctx, toolKey{}, t) // for ToolFromContext
		out, err = ts.throughMiddleware(ctx, call, run)
	} else {
		out, err = run(ctx)
	}
	if err == nil && ts.guards != nil {
		out, err = ts.guards.guardResult(ctx, call, out)
	}
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", call.Name, err)
	}
	return out, nil
}

type toolKey struct{}

// ToolFromContext returns the tool a call runs, given the context of a
// [WithApproval] callback or a [ToolMiddleware]. An approval so learns,
// say, whether the tool is [Tool.Destructive]. It reports false for any
// other context. The tool is the one the model called: a middleware that
// changes the call's name does not change it.
func ToolFromContext(ctx context.Context) (Tool, bool) {
	t, ok := ctx.Value(toolKey{}).(*Tool)
	if !ok || t == nil {
		return Tool{}, false
	}
	return *t, true
}

// toolTimeout is the cause of a tool's context ending at its timeout.
type toolTimeout time.Duration

func (d toolTimeout) Error() string { return "timed out after " + time.Duration(d).String() }

func (toolTimeout) Unwrap() error { return context.DeadlineExceeded }

// throughMiddleware runs a prepared call through the tool middleware.
// The innermost handler runs the tool, after checking and decoding the
// arguments again if a middleware changed the call.
func (ts *toolset) throughMiddleware(ctx context.Context, call ToolCall, run invocation) (string, error) {
	h := func(ctx context.Context, c ToolCall) (string, error) {
		if c != call {
			_, inv, err := ts.bind(c)
			if err != nil {
				return "", err
			}
			run = inv
		}
		out, err := run(ctx)
		if err != nil {
			return "", err
		}
		return encodeResult(out)
	}
	for _, mw := range slices.Backward(ts.middleware) {
		next := h
		h = func(ctx context.Context, c ToolCall) (string, error) { return mw(ctx, c, next) }
	}
	return h(ctx, call)
}
