package temporal

import (
	"context"
	"errors"

	"go.temporal.io/sdk/client"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/a2aserver"
)

// TaskRunner runs an A2A server's tasks as durable runs
// ([a2aserver.Options.Durable]). Each task is a workflow whose ID is the
// job's. It runs on workers that serve the agent. It is safe for concurrent
// use.
type TaskRunner struct {
	Client    client.Client
	TaskQueue string // DefaultTaskQueue if empty
	// Agent names the agent the tasks run on, as the workers serve it.
	Agent string
}

var _ a2aserver.DurableRunner = (*TaskRunner)(nil)

// Start starts the task's run, or attaches to it if it runs already.
func (tr *TaskRunner) Start(ctx context.Context, job a2aserver.DurableJob) error {
	if tr.Client == nil {
		return errors.New("robby/temporal: TaskRunner without a client")
	}
	_, err := Start(ctx, tr.Client, client.StartWorkflowOptions{ID: job.ID, TaskQueue: tr.TaskQueue},
		Request{Agent: tr.Agent, Messages: job.Messages, Approve: job.Approve, CallerTools: job.CallerTools,
			Agents: job.Agents})
	return err
}

// Progress returns the run's events so far, and the calls that wait for
// an approval or for the client's results ([Run.Progress]).
func (tr *TaskRunner) Progress(ctx context.Context, id string) (a2aserver.DurableProgress, error) {
	p, err := Attach(tr.Client, id).Progress(ctx)
	if err != nil {
		return a2aserver.DurableProgress{}, err
	}
	return a2aserver.DurableProgress{Events: p.Events, AwaitingApproval: p.AwaitingApproval, AwaitingResults: p.AwaitingResults}, nil
}

// SendToolResults answers the caller-run calls the task's run waits for
// ([Run.SendToolResults]).
func (tr *TaskRunner) SendToolResults(ctx context.Context, id string, results []robby.ToolResult) error {
	return Attach(tr.Client, id).SendToolResults(ctx, results...)
}

// Approve answers a call the task's run waits for ([Run.Approve]).
func (tr *TaskRunner) Approve(ctx context.Context, id, callID string, approved bool, reason string) error {
	return Attach(tr.Client, id).Approve(ctx, Approval{CallID: callID, Approved: approved, Reason: reason})
}

// Wait waits for the task's run to end, from any process. A cancelled
// run's error wraps [context.Canceled].
func (tr *TaskRunner) Wait(ctx context.Context, id string) (*robby.Result, error) {
	return wait(ctx, tr.Client, id)
}

// Cancel cancels the task's run.
func (tr *TaskRunner) Cancel(ctx context.Context, id string) error {
	return Attach(tr.Client, id).Cancel(ctx)
}
