package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
)

// ResponsesRunner runs an endpoint's background responses as durable runs
// ([openaiserver.Options.Background]). Each response is a workflow whose ID is
// the response's. It runs on workers that serve the endpoint's agents. It is
// safe for concurrent use.
type ResponsesRunner struct {
	Client    client.Client
	TaskQueue string // DefaultTaskQueue if empty
	// Agent, if set, names the agent every response runs on, whatever model its
	// request names. It is the name the workers serve it under.
	Agent string
}

var _ openaiserver.BackgroundRunner = (*ResponsesRunner)(nil)

// Start starts the response's run, or attaches to it if it runs already.
func (rr *ResponsesRunner) Start(ctx context.Context, job openaiserver.BackgroundJob) error {
	if rr.Client == nil {
		return errors.New("robby/temporal: ResponsesRunner without a client")
	}
	params, err := json.Marshal(job.Params)
	if err != nil {
		return err
	}
	req := Request{Agent: job.Agent, Messages: job.Messages, Agents: job.Agents, CallerTools: job.CallerTools, Params: params,
		EndOnCallerTools: true}
	if rr.Agent != "" {
		req.Agent = rr.Agent
	}
	if job.Instructions != "" {
		req.System = []string{job.Instructions}
	}
	_, err = Start(ctx, rr.Client, client.StartWorkflowOptions{ID: job.ID, TaskQueue: rr.TaskQueue}, req)
	return err
}

// Wait waits for the response's run to end, from any process: the
// workflow's result is kept by the server. A cancelled run's error wraps
// [context.Canceled].
func (rr *ResponsesRunner) Wait(ctx context.Context, id string) (*robby.Result, error) {
	return wait(ctx, rr.Client, id)
}

// wait waits for run id's result; a cancelled run's error wraps
// [context.Canceled].
func wait(ctx context.Context, c client.Client, id string) (*robby.Result, error) {
	res, err := Attach(c, id).Result(ctx)
	if temporal.IsCanceledError(err) {
		err = fmt.Errorf("%w: %w", context.Canceled, err)
	}
	return res, err
}

// Cancel cancels the response's run.
func (rr *ResponsesRunner) Cancel(ctx context.Context, id string) error {
	return Attach(rr.Client, id).Cancel(ctx)
}
