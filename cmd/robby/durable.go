package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/robby-go/robby/internal/randid"
	"github.com/robby-go/robby/temporal"
)

// durableAgent is the name under which robby worker serves its agent, and
// robby run -temporal asks for it.
const durableAgent = "robby"

// durableFlags are the flags of the commands that talk to Temporal.
type durableFlags struct {
	addr, queue string
}

func (d *durableFlags) register(fs *flag.FlagSet, what string) {
	fs.StringVar(&d.addr, "temporal", "", what)
	fs.StringVar(&d.queue, "task-queue", temporal.DefaultTaskQueue, "the Temporal task queue of durable runs")
}

// dial connects to the Temporal frontend, its SDK's logs silenced but
// for errors, which go to stderr.
func (d *durableFlags) dial(stderr io.Writer) (client.Client, error) {
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	c, err := client.Dial(client.Options{HostPort: d.addr, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("connecting to Temporal at %s: %w", d.addr, err)
	}
	return c, nil
}

// durableRun starts (or, with -workflow-id, attaches to) a durable run of
// prompt and prints its answer. With a schema, the answer is JSON that
// fits it, printed as one line.
func durableRun(ctx context.Context, d *durableFlags, id, prompt string, schema json.RawMessage, stdout, stderr io.Writer) error {
	c, err := d.dial(stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	opts := client.StartWorkflowOptions{ID: id, TaskQueue: d.queue}
	req := temporal.Request{Agent: durableAgent, Prompt: prompt}
	if schema != nil {
		if opts.ID == "" {
			opts.ID = "robby-" + randid.Alnum(20) // named here, to be told before the run ends
		}
		fmt.Fprintf(stderr, "durable run %s (re-attach with -workflow-id %s)\n", opts.ID, opts.ID)
		return durableTyped(ctx, c, opts, req, schema, stdout)
	}
	run, err := temporal.Start(ctx, c, opts, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "durable run %s (re-attach with -workflow-id %s)\n", run.ID(), run.ID())
	res, err := run.Result(ctx)
	if res.Text != "" {
		fmt.Fprintln(stdout, res.Text)
	}
	return err
}

// durableTyped runs a durable run whose answer fits schema, and prints it
// as one line of JSON.
func durableTyped(ctx context.Context, c client.Client, opts client.StartWorkflowOptions, req temporal.Request, schema json.RawMessage, stdout io.Writer) error {
	answer, _, err := temporal.RunSchema(ctx, c, opts, req, schema)
	return printAnswer(stdout, answer, err)
}
