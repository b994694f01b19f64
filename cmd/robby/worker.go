package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"go.temporal.io/sdk/worker"

	"github.com/robby-go/robby/temporal"
)

var workerCommand = commandSpec{
	name: "worker", synopsis: "robby worker -temporal HOST:PORT [flags]",
	summary: "serve the agent to durable runs on Temporal ('robby run -temporal' starts one)",
	about: "Serves the agent to durable runs on Temporal: runs their model requests and tool calls, as activities,\n" +
		"until interrupted. The model flags and keys are the worker's alone: runs started with\n" +
		"'robby run -temporal' carry only the prompt. See docs/DURABLE.md.",
	env: agentEnv, setup: setupWorker,
}

func setupWorker(c *command) func(context.Context) error {
	var f agentFlags
	var d durableFlags
	f.register(c.fs)
	d.register(c.fs, "HOST:PORT of the Temporal frontend (required)")
	return func(ctx context.Context) error {
		if d.addr == "" {
			c.usage(c.stderr)
			return usageError{errors.New("worker needs -temporal HOST:PORT")}
		}
		return work(ctx, &f, &d, c.stderr)
	}
}

// work serves durable runs until ctx is done.
func work(ctx context.Context, f *agentFlags, d *durableFlags, stderr io.Writer) error {
	agent, err := f.newAgent(stderr)
	if err != nil {
		return err
	}
	defer f.close()
	defer agent.Close()
	c, err := d.dial(stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	w := worker.New(c, d.queue, worker.Options{})
	temporal.Register(w, temporal.Agents{durableAgent: agent}, temporal.Options{})
	stop := make(chan any)
	go func() { <-ctx.Done(); close(stop) }()
	fmt.Fprintf(stderr, "robby worker: %s at %s for task queue %q on %s\n", f.model, f.baseURL, d.queue, d.addr)
	if err := w.Run(stop); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}
