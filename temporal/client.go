package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/robby-go/robby"
)

// A Run is a handle on a durable run, from any process: the one that
// started it or another. It is safe for concurrent use.
type Run struct {
	c  client.Client
	id string
}

// Start starts a durable run of req on the task queue opts names
// ([DefaultTaskQueue] if none). If opts.ID names a run still going, Start
// attaches to it instead, whatever req says. A caller that lost its process so
// finds its run again by ID.
func Start(ctx context.Context, c client.Client, opts client.StartWorkflowOptions, req Request) (*Run, error) {
	if req.Agent == "" {
		return nil, errors.New("robby/temporal: the request names no agent")
	}
	if opts.TaskQueue == "" {
		opts.TaskQueue = DefaultTaskQueue
	}
	if opts.ID != "" && opts.WorkflowIDConflictPolicy == enums.WORKFLOW_ID_CONFLICT_POLICY_UNSPECIFIED {
		opts.WorkflowIDConflictPolicy = enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	}
	wr, err := c.ExecuteWorkflow(ctx, opts, WorkflowName, req)
	if err != nil {
		return nil, fmt.Errorf("robby/temporal: starting the run: %w", err)
	}
	return &Run{c: c, id: wr.GetID()}, nil
}

// Attach returns a handle on the run with the given workflow ID.
func Attach(c client.Client, workflowID string) *Run {
	return &Run{c: c, id: workflowID}
}

// ID returns the run's workflow ID.
func (r *Run) ID() string { return r.id }

// Result waits for the run to end, following it through continue-as-new,
// and returns its result. A run that reached its turn limit or budget
// returns its partial result with an error wrapping [robby.ErrMaxTurns] or
// [robby.ErrBudget], as [robby.Agent.Run] does.
func (r *Run) Result(ctx context.Context) (*robby.Result, error) {
	var res robby.Result
	err := r.c.GetWorkflow(ctx, r.id, "").Get(ctx, &res)
	if err == nil {
		return &res, nil
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		var sentinel error
		switch appErr.Type() {
		case errMaxTurns:
			sentinel = robby.ErrMaxTurns
		case errBudget:
			sentinel = robby.ErrBudget
		}
		if sentinel != nil {
			if derr := appErr.Details(&res); derr != nil {
				return new(robby.Result), fmt.Errorf("robby/temporal: run %s: %w: %s", r.id, sentinel, appErr.Message())
			}
			return &res, fmt.Errorf("robby/temporal: run %s: %w: %s", r.id, sentinel, appErr.Message())
		}
	}
	return new(robby.Result), fmt.Errorf("robby/temporal: run %s: %w", r.id, err)
}

// Progress returns what the run did so far.
func (r *Run) Progress(ctx context.Context) (*Progress, error) {
	v, err := r.c.QueryWorkflow(ctx, r.id, "", ProgressQuery)
	if err != nil {
		return nil, fmt.Errorf("robby/temporal: progress of run %s: %w", r.id, err)
	}
	var p Progress
	if err := v.Get(&p); err != nil {
		return nil, fmt.Errorf("robby/temporal: progress of run %s: %w", r.id, err)
	}
	return &p, nil
}

// SendToolResults answers calls of caller-run tools the run waits for
// ([Progress.AwaitingResults]), matched by Call.ID, as
// [robby.WithToolResults] does. Results for calls that do not wait are
// ignored.
func (r *Run) SendToolResults(ctx context.Context, results ...robby.ToolResult) error {
	if err := r.c.SignalWorkflow(ctx, r.id, "", ToolResultsSignal, results); err != nil {
		return fmt.Errorf("robby/temporal: sending tool results to run %s: %w", r.id, err)
	}
	return nil
}

// Approve answers a call that waits for an approval
// ([Progress.AwaitingApproval]). A refused call is not run. The model reads the
// reason, with [robby.ErrNotApproved].
func (r *Run) Approve(ctx context.Context, a Approval) error {
	if err := r.c.SignalWorkflow(ctx, r.id, "", ApprovalSignal, a); err != nil {
		return fmt.Errorf("robby/temporal: sending an approval to run %s: %w", r.id, err)
	}
	return nil
}

// Cancel asks the run to stop: the activities running are cancelled, and
// the run ends as cancelled.
func (r *Run) Cancel(ctx context.Context) error {
	if err := r.c.CancelWorkflow(ctx, r.id, ""); err != nil {
		return fmt.Errorf("robby/temporal: cancelling run %s: %w", r.id, err)
	}
	return nil
}

// RunTyped starts a durable run whose answer is a T, as [robby.RunTyped]
// asks for one. T's schema is inferred by jsonschema-go's For, and the
// run goes as [RunSchema]'s. The answer is decoded into T. It waits for the
// run to end.
func RunTyped[T any](ctx context.Context, c client.Client, opts client.StartWorkflowOptions, req Request) (T, *robby.Result, error) {
	var zero T
	schema, err := jsonschema.For[T](nil)
	if err != nil {
		return zero, new(robby.Result), fmt.Errorf("robby/temporal: RunTyped: %w", err)
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return zero, new(robby.Result), fmt.Errorf("robby/temporal: RunTyped: %w", err)
	}
	answer, res, err := RunSchema(ctx, c, opts, req, raw)
	if err != nil {
		return zero, res, err
	}
	var v T
	if err := json.Unmarshal(answer, &v); err != nil {
		return zero, res, fmt.Errorf("robby/temporal: RunTyped: the answer is not a %T: %w", v, err)
	}
	return v, res, nil
}

// RunSchema starts a durable run whose answer is JSON that fits schema,
// a JSON Schema of an object. The model is asked for it natively
// (response_format json_schema). It waits for the run to end. The answer
// is checked against the schema; one that does not fit is an
// [*robby.AnswerError] holding it. A durable run makes no repair turns.
func RunSchema(ctx context.Context, c client.Client, opts client.StartWorkflowOptions, req Request, schema json.RawMessage) (json.RawMessage, *robby.Result, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, new(robby.Result), fmt.Errorf("robby/temporal: RunSchema: %w", err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, new(robby.Result), fmt.Errorf("robby/temporal: RunSchema: %w", err)
	}
	format, err := json.Marshal(map[string]any{"type": "json_schema",
		"json_schema": map[string]any{"name": "answer", "schema": schema}})
	if err != nil {
		return nil, new(robby.Result), fmt.Errorf("robby/temporal: RunSchema: %w", err)
	}
	req.ResponseFormat = format
	run, err := Start(ctx, c, opts, req)
	if err != nil {
		return nil, new(robby.Result), err
	}
	res, err := run.Result(ctx)
	if err != nil {
		return nil, res, err
	}
	var v any
	err = json.Unmarshal([]byte(res.Text), &v)
	if err == nil {
		err = resolved.Validate(v)
	}
	if err != nil {
		return nil, res, &robby.AnswerError{Mode: robby.AnswerNative, Raw: res.Text, Failures: []string{err.Error()}, Attempts: 1}
	}
	return json.RawMessage(res.Text), res, nil
}
