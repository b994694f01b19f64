package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/robby-go/robby/temporal"
	"go.temporal.io/sdk/worker"
)

func workerCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := newCommand("worker", "robby worker -temporal HOST:PORT [flags]",
		"Serves the agent to durable runs on Temporal: runs their model requests and tool calls, as activities,\n"+
			"until interrupted. The model flags and keys are the worker's alone: runs started with\n"+
			"'robby run -temporal' carry only the prompt.", agentEnv)
	var f agentFlags
	var d durableFlags
	f.register(cmd.fs)
	d.register(cmd.fs, "HOST:PORT of the Temporal frontend (required)")
	if err := cmd.parse(args, stdout, stderr); err != nil {
		return err
	}
	if d.addr == "" {
		cmd.usage(stderr)
		return usageError{errors.New("worker needs -temporal HOST:PORT")}
	}
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
