package temporal

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/openai/openai-go/v3"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/robby-go/robby"
)

// activities are a worker's model and tool activities, over its agents.
type activities struct {
	agents Agents
	events func(workflowID string, e robby.Event)
}

// agent returns a fresh conversation of the named agent, begun as New
// began it.
func (w *activities) agent(name string) (*robby.Agent, error) {
	a := w.agents[name]
	if a == nil {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("robby: this worker has no agent named %q", name), "robby.UnknownAgent", nil)
	}
	c := a.Clone()
	c.Reset()
	return c, nil
}

// publish gives e to the worker's subscriber, if any.
func (w *activities) publish(ctx context.Context, e robby.Event) {
	if w.events != nil {
		w.events(activity.GetInfo(ctx).WorkflowExecution.ID, e)
	}
}

// Model runs one turn of the agent: one model request, with the results of the
// calls before it. Its deltas are streamed to the subscriber.
func (w *activities) Model(ctx context.Context, in turnInput) (*turnOutput, error) {
	a, err := w.agent(in.Agent)
	if err != nil {
		return nil, err
	}
	a.AddTeamMessages(in.Agents, in.Messages...)
	opts, err := in.options()
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "robby.BadRequest", nil)
	}
	stop := heartbeat(ctx)
	defer stop()
	events := a.ResumeStream(ctx, opts...)
	if in.Prompt != "" {
		events = a.Stream(ctx, in.Prompt, opts...)
	}
	var res *robby.Result
	for e, err := range events {
		if e.Kind != robby.EventDone {
			activity.RecordHeartbeat(ctx) // throttled by the SDK
			w.publish(ctx, e)
			continue
		}
		res = e.Result
		if err != nil {
			return turnError(res, err)
		}
	}
	return w.turnOutput(member(a, res.Agent), res), nil
}

// member returns the agent of a's team named name, the one whose turn made
// a team's calls; a itself when it leads no team.
func member(a *robby.Agent, name string) *robby.Agent {
	if m := a.TeamAgent(name); m != nil {
		return m
	}
	return a
}

// options turns a turn's input into run options.
func (in *turnInput) options() ([]robby.RunOption, error) {
	opts := []robby.RunOption{robby.WithOneTurn(in.Done, in.Spent), robby.WithToolResults(in.Results...)}
	if len(in.CallerTools) > 0 {
		opts = append(opts, robby.WithCallerTools(in.CallerTools...))
	}
	for _, s := range in.System {
		opts = append(opts, robby.WithRunSystem(s))
	}
	if len(in.Params) == 0 && in.Model == "" && len(in.ResponseFormat) == 0 {
		return opts, nil
	}
	var p openai.ChatCompletionNewParams
	if len(in.Params) > 0 {
		if err := p.UnmarshalJSON(in.Params); err != nil {
			return nil, fmt.Errorf("robby: params: %w", err)
		}
	}
	if in.Model != "" {
		p.Model = in.Model
	}
	if len(in.ResponseFormat) > 0 {
		if err := p.ResponseFormat.UnmarshalJSON(in.ResponseFormat); err != nil {
			return nil, fmt.Errorf("robby: response_format: %w", err)
		}
	}
	opts = append(opts, robby.WithRunParams(p))
	return opts, nil
}

// turnOutput tells the workflow what the turn did, and what it needs to
// run the calls it made.
func (w *activities) turnOutput(a *robby.Agent, res *robby.Result) *turnOutput {
	out := &turnOutput{Result: *res, Limits: a.Limits()}
	if len(res.Pending) > 0 {
		out.Idempotent, out.Destructive = map[string]bool{}, map[string]bool{}
		for _, t := range a.Tools() {
			if t.IsIdempotent() {
				out.Idempotent[t.Name()] = true
			}
			if t.IsDestructive() {
				out.Destructive[t.Name()] = true
			}
		}
	}
	return out
}

// turnError sorts a turn's error. The limits end the run with its partial
// result. An endpoint's refusal and a guard's block are not retried; the
// rest is.
func turnError(res *robby.Result, err error) (*turnOutput, error) {
	var apiErr *robby.APIError
	switch {
	case errors.Is(err, robby.ErrMaxTurns):
		return &turnOutput{Result: *res, Err: err.Error(), ErrKind: errMaxTurns}, nil
	case errors.Is(err, robby.ErrBudget):
		return &turnOutput{Result: *res, Err: err.Error(), ErrKind: errBudget}, nil
	case errors.Is(err, robby.ErrGuardBlocked):
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "robby.GuardBlocked", nil)
	case errors.As(err, &apiErr) && permanent(apiErr.StatusCode):
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "robby.APIError", nil)
	}
	return nil, err
}

// permanent reports whether an endpoint's status says asking again will
// not help.
func permanent(status int) bool {
	return status >= 400 && status < 500 && status != http.StatusRequestTimeout &&
		status != http.StatusConflict && status != http.StatusTooManyRequests
}

// Tool runs one tool call, heartbeating while it runs.
func (w *activities) Tool(ctx context.Context, in toolInput) (robby.ToolResult, error) {
	a, err := w.agent(in.Agent)
	if err != nil {
		return robby.ToolResult{}, err
	}
	a = member(a, in.Member)
	stop := heartbeat(ctx)
	defer stop()
	destructive := slices.ContainsFunc(a.Tools(), func(t robby.Tool) bool { return t.Name() == in.Call.Name && t.IsDestructive() })
	w.publish(ctx, robby.Event{Kind: robby.EventToolCall, Turn: in.Turn, ToolCall: &in.Call, Destructive: destructive})
	results, err := a.ExecuteToolCalls(ctx, []robby.ToolCall{in.Call})
	if err != nil {
		return robby.ToolResult{}, err // the activity was cancelled or timed out
	}
	r := results[0]
	w.publish(ctx, robby.Event{Kind: robby.EventToolResult, Turn: in.Turn, ToolCall: &r.Call, ToolResult: &r})
	return r, nil
}

// heartbeat records the activity's heartbeat at a third of its heartbeat
// timeout, until stopped. A dead worker is so found out soon, and a live one
// never taken for dead.
func heartbeat(ctx context.Context) (stop func()) {
	every := activity.GetInfo(ctx).HeartbeatTimeout / 3
	if every <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { close(done); <-finished }
}
