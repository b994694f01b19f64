package temporal

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/openai/openai-go/v3"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/robby-go/robby"
)

// Workflow is a durable run of the agent req names: the ReAct loop, each model
// request and each tool call an activity. Its result is the run's
// [robby.Result]. A run that reached its turn limit or budget fails with an
// application error of type "robby.MaxTurns" or "robby.Budget". Its details are
// the partial result. [Run.Result] turns it back into [robby.ErrMaxTurns] or
// [robby.ErrBudget].
//
// Like every workflow, it must stay deterministic: see docs/DURABLE.md, and the
// replay tests that keep it so.
func Workflow(ctx workflow.Context, req Request) (*robby.Result, error) {
	r := newLoop(req)
	if err := workflow.SetQueryHandler(ctx, ProgressQuery, r.progress); err != nil {
		return nil, err
	}
	// Runs started before the history's size counted keep their decisions.
	bySize := workflow.GetVersion(ctx, continueBySize, workflow.DefaultVersion, 1) == 1
	for turns := 0; ; turns++ {
		if turns == r.turnsPerRun() || turns > 0 && bySize && r.historyFull(ctx) {
			return nil, workflow.NewContinueAsNewError(ctx, WorkflowName, r.carry())
		}
		out, err := r.turn(ctx)
		if err != nil {
			return &r.res, err
		}
		r.absorb(out)
		switch {
		case out.ErrKind != "":
			r.endTurn(out)
			return &r.res, temporal.NewNonRetryableApplicationError(out.Err, out.ErrKind, nil, r.res)
		case len(out.Result.Pending) == 0:
			r.endTurn(out)
			return &r.res, nil
		case r.req.EndOnCallerTools && r.isCaller(out.Result.Pending[0]):
			r.res.Pending = out.Result.Pending // the agent pauses on caller-run calls alone
			r.endTurn(out)
			return &r.res, nil
		}
		if err := r.answer(ctx, out); err != nil {
			return &r.res, err
		}
		r.endTurn(out)
	}
}

// A loop is a durable run's state: what the workflow's history rebuilds.
type loop struct {
	req      Request
	res      robby.Result
	spent    robby.Budget
	results  []robby.ToolResult // for the next turn to give the model
	events   []robby.Event
	awaiting []robby.ToolCall // caller-run calls waiting for their results
	approval []robby.ToolCall // calls waiting for an approval
}

func newLoop(req Request) *loop {
	r := &loop{req: req}
	if c := req.Carried; c != nil {
		r.res, r.spent, r.results, r.events = c.Result, c.Spent, c.Results, c.Events
		r.req.Carried = nil
	}
	return r
}

func (r *loop) turnsPerRun() int {
	if r.req.TurnsPerRun > 0 {
		return r.req.TurnsPerRun
	}
	return DefaultTurnsPerRun
}

// carry is the request the run continues as: the same, with what it did.
func (r *loop) carry() Request {
	req := r.req
	req.Carried = &Carried{Result: r.res, Spent: r.spent, Results: r.results, Events: r.events}
	return req
}

// historyFull reports whether the run's history is big enough to continue
// as new: each turn's input holds the whole conversation, so the history
// grows with the square of the turns.
func (r *loop) historyFull(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistorySize() >= cmp.Or(r.req.HistoryBytes, DefaultHistoryBytes)
}

func (r *loop) heartbeatTimeout() time.Duration {
	if r.req.HeartbeatTimeout > 0 {
		return r.req.HeartbeatTimeout
	}
	return DefaultHeartbeatTimeout
}

// turn asks the model once, in an activity retried with backoff.
func (r *loop) turn(ctx workflow.Context) (*turnOutput, error) {
	timeout := r.req.ModelTimeout
	if timeout <= 0 {
		timeout = DefaultModelTimeout
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: timeout,
		HeartbeatTimeout:    r.heartbeatTimeout(),
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: time.Minute, MaximumAttempts: 5},
	})
	in := turnInput{Agent: r.req.Agent, Messages: slices.Concat(r.req.Messages, r.res.Messages), Agents: r.agents(),
		Results: r.results, CallerTools: r.req.CallerTools, System: r.req.System, Model: r.req.Model,
		Params: r.req.Params, ResponseFormat: r.req.ResponseFormat, Done: r.res.Turns, Spent: r.spent}
	if len(r.res.Messages) == 0 {
		in.Prompt = r.req.Prompt // the first turn adds it
	}
	var out turnOutput
	err := workflow.ExecuteActivity(ctx, ModelActivityName, in).Get(ctx, &out)
	return &out, err
}

// agents returns, for a team's root, the agent of each message of the
// conversation; nil for an agent without a team.
func (r *loop) agents() []string {
	if len(r.req.Agents) == 0 && len(r.res.Agents) == 0 {
		return nil
	}
	agents := make([]string, len(r.req.Messages), len(r.req.Messages)+len(r.res.Agents))
	copy(agents, r.req.Agents)
	return append(agents, r.res.Agents...)
}

// absorb adds a turn to the run's result. A team's turn may be several: that
// of each agent the conversation was handed over to.
func (r *loop) absorb(out *turnOutput) {
	t := &out.Result
	r.res.Agent, r.res.Agents = t.Agent, append(r.res.Agents, t.Agents...)
	for i := range t.Handoffs {
		r.res.Handoffs = append(r.res.Handoffs, t.Handoffs[i])
		turn := r.res.Turns + t.Turns - len(t.Handoffs) + i // each handoff ends a turn of the agent before
		r.events = append(r.events, robby.Event{Kind: robby.EventHandoff, Turn: turn, Transfer: &t.Handoffs[i],
			Agent: t.Handoffs[i].From})
	}
	r.res.Text, r.res.Reasoning = t.Text, t.Reasoning
	r.res.Messages = append(r.res.Messages, t.Messages...)
	r.res.Turns += t.Turns
	r.res.Models = append(r.res.Models, t.Models...)
	r.res.ToolCalls = append(r.res.ToolCalls, t.ToolCalls...) // those a last turn did not run
	r.res.Usage = r.res.Usage.Add(t.Usage)
	r.spent.ModelCalls += t.Turns
	r.spent.Tokens += max(t.Usage.TotalTokens, t.Usage.PromptTokens+t.Usage.CompletionTokens)
	r.spent.Cost += t.Usage.Cost
	r.results = nil
	if t.Text != "" {
		r.events = append(r.events, robby.Event{Kind: robby.EventText, Turn: r.res.Turns, Delta: t.Text, Agent: t.Agent})
	}
}

func (r *loop) endTurn(out *turnOutput) {
	u := out.Result.Usage
	r.events = append(r.events, robby.Event{Kind: robby.EventTurnEnd, Turn: r.res.Turns, Usage: &u})
}

// answer gets the results of a turn's calls. The caller gives those of its
// tools, tool activities those of the agent's.
func (r *loop) answer(ctx workflow.Context, out *turnOutput) error {
	calls := out.Result.Pending
	if r.isCaller(calls[0]) { // the agent pauses on caller-run calls alone
		results, err := r.awaitResults(ctx, calls)
		r.results = results
		return err
	}
	results, err := r.runTools(ctx, calls, out)
	r.res.ToolCalls = append(r.res.ToolCalls, results...)
	r.results = results
	return err
}

// isCaller reports whether c calls a caller-run tool.
func (r *loop) isCaller(c robby.ToolCall) bool {
	return slices.ContainsFunc(r.req.CallerTools, func(t openai.FunctionDefinitionParam) bool { return t.Name == c.Name })
}

// awaitResults waits until the caller sent a result for each call.
func (r *loop) awaitResults(ctx workflow.Context, calls []robby.ToolCall) ([]robby.ToolResult, error) {
	r.awaiting = calls
	defer func() { r.awaiting = nil }()
	results := make([]robby.ToolResult, len(calls))
	left := len(calls)
	ch := workflow.GetSignalChannel(ctx, ToolResultsSignal)
	for left > 0 {
		var got []robby.ToolResult
		if !receive(ctx, ch, &got) {
			return nil, ctx.Err()
		}
		for _, g := range got {
			if i := slices.IndexFunc(calls, func(c robby.ToolCall) bool { return c.ID == g.Call.ID }); i >= 0 && results[i].Call.ID == "" {
				results[i] = robby.ToolResult{Call: calls[i], Output: g.Output, Err: g.Err, Duration: g.Duration}
				left--
			}
		}
	}
	return results, nil
}

// receive waits for a signal on ch into v, and reports false if ctx ended
// first.
func receive(ctx workflow.Context, ch workflow.ReceiveChannel, v any) bool {
	ok := true
	s := workflow.NewSelector(ctx)
	s.AddReceive(ch, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, v) })
	s.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) { ok = false })
	s.Select(ctx)
	return ok
}

// runTools runs the agent's calls of one turn, each in an activity of its
// own, concurrently, after their approvals. Calls past the turn's limit
// are not run.
func (r *loop) runTools(ctx workflow.Context, calls []robby.ToolCall, out *turnOutput) ([]robby.ToolResult, error) {
	turn := r.res.Turns
	results := make([]robby.ToolResult, len(calls))
	var run []int
	for i, c := range calls {
		r.events = append(r.events, robby.Event{Kind: robby.EventToolCall, Turn: turn, ToolCall: &calls[i],
			Destructive: out.Destructive[c.Name], Agent: out.Result.Agent})
		if n := out.Limits.MaxToolCallsPerTurn; n > 0 && i >= n {
			results[i] = failed(c, robby.ErrToolLimit)
			continue
		}
		run = append(run, i)
	}
	denied, err := r.awaitApprovals(ctx, calls, run)
	if err != nil {
		return nil, err
	}
	futures := make(map[int]workflow.Future, len(run))
	for _, i := range run {
		if reason, ok := denied[calls[i].ID]; ok {
			results[i] = failed(calls[i], fmt.Errorf("%w: %s", robby.ErrNotApproved, reason))
			continue
		}
		actx := workflow.WithActivityOptions(ctx, r.toolOptions(out, calls[i].Name))
		futures[i] = workflow.ExecuteActivity(actx, ToolActivityName, toolInput{Agent: r.req.Agent, Member: out.Result.Agent,
			Call: calls[i], Turn: turn})
	}
	for _, i := range run {
		f := futures[i]
		if f == nil {
			continue
		}
		if err := f.Get(ctx, &results[i]); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			results[i] = r.lost(calls[i], out, err)
		}
	}
	for i := range results {
		r.events = append(r.events, robby.Event{Kind: robby.EventToolResult, Turn: turn, ToolCall: &calls[i], ToolResult: &results[i],
			Agent: out.Result.Agent})
	}
	return results, nil
}

// lost is the result of a call whose activity failed: its worker died, or
// it timed out. A tool that may not run twice was run at most once.
func (r *loop) lost(c robby.ToolCall, out *turnOutput, err error) robby.ToolResult {
	if out.Idempotent[c.Name] {
		return failed(c, fmt.Errorf("robby: tool call failed after retries: %w", err))
	}
	return failed(c, robby.ErrInterrupted)
}

// toolOptions are a call's activity options: the tool's timeout, and
// retries only for a tool that may run again.
func (r *loop) toolOptions(out *turnOutput, name string) workflow.ActivityOptions {
	timeout := out.Limits.ToolTimeout
	if timeout <= 0 {
		timeout = 24 * time.Hour
	}
	retry := &temporal.RetryPolicy{MaximumAttempts: 1}
	if out.Idempotent[name] {
		retry = &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: time.Minute, MaximumAttempts: 5}
	}
	return workflow.ActivityOptions{
		// The tool's own timeout ends the call first; the activity's
		// leaves the worker time to report it.
		StartToCloseTimeout: timeout + r.heartbeatTimeout(),
		HeartbeatTimeout:    r.heartbeatTimeout(),
		RetryPolicy:         retry,
	}
}

// awaitApprovals waits for an approval of each call to run that needs one. It
// returns the reasons of those refused, by call ID.
func (r *loop) awaitApprovals(ctx workflow.Context, calls []robby.ToolCall, run []int) (map[string]string, error) {
	for _, i := range run {
		if slices.Contains(r.req.Approve, "*") || slices.Contains(r.req.Approve, calls[i].Name) {
			r.approval = append(r.approval, calls[i])
		}
	}
	defer func() { r.approval = nil }()
	denied := map[string]string{}
	ch := workflow.GetSignalChannel(ctx, ApprovalSignal)
	for len(r.approval) > 0 {
		var a Approval
		if !receive(ctx, ch, &a) {
			return nil, ctx.Err()
		}
		i := slices.IndexFunc(r.approval, func(c robby.ToolCall) bool { return c.ID == a.CallID })
		if i < 0 {
			continue // for no call waiting: ignored
		}
		r.approval = slices.Delete(r.approval, i, i+1)
		if !a.Approved {
			denied[a.CallID] = cmp.Or(a.Reason, "refused")
		}
	}
	return denied, nil
}

// failed is the result of a call that did not run, as the model reads it.
func failed(c robby.ToolCall, err error) robby.ToolResult {
	return robby.ToolResult{Call: c, Err: err, Output: "Error: " + err.Error()}
}

// progress answers the progress query.
func (r *loop) progress() (Progress, error) {
	return Progress{Events: r.events, Turns: r.res.Turns, Usage: r.res.Usage, Agent: r.res.Agent,
		AwaitingResults: r.awaiting, AwaitingApproval: r.approval}, nil
}
