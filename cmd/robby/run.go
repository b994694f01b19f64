package main

import (
	"context"
	"errors"
	"strings"
)

var runCommand = commandSpec{
	name: "run", synopsis: `robby run [flags] "prompt"`, takesArgs: true,
	summary: "stream one answer to a prompt; tool steps go to stderr",
	about: "Streams the agent's answer to the prompt to stdout; its tool steps go to stderr.\n" +
		"With -schema FILE, prints only the answer: one line of JSON that fits the schema, ready for jq.\n" +
		"With -temporal HOST:PORT, runs durably on a 'robby worker', and survives the worker's death (docs/DURABLE.md).",
	env: agentEnv, setup: setupRun,
}

func setupRun(c *command) func(context.Context) error {
	var f agentFlags
	var sf schemaFlags
	var d durableFlags
	f.kb.modes = true
	f.register(c.fs)
	sf.register(c.fs, "a JSON Schema file: print only the answer, JSON validated against it, on stdout")
	d.register(c.fs, "HOST:PORT of a Temporal frontend: run durably, on a 'robby worker' (which has the model flags and keys)")
	id := c.fs.String("workflow-id", "", "with -temporal: the durable run's ID, to name it or to re-attach to it")
	return func(ctx context.Context) error {
		prompt := strings.Join(c.args, " ")
		if d.addr != "" {
			if prompt == "" && *id == "" {
				c.usage(c.stderr)
				return usageError{errors.New("run needs a prompt")}
			}
			schema, err := sf.durable(c.fs)
			if err != nil {
				return err
			}
			return durableRun(ctx, &d, *id, prompt, schema, c.stdout, c.stderr)
		}
		typed, err := sf.read()
		if err != nil {
			return err
		}
		typedOpts := typed.options()
		if len(c.args) == 0 {
			c.usage(c.stderr)
			return usageError{errors.New("run needs a prompt")}
		}
		agent, err := f.newAgent(c.stderr)
		if err != nil {
			return err
		}
		defer f.close()
		defer agent.Close()
		opts, err := f.kb.contextFor(ctx, f.kbase, prompt)
		if err != nil {
			return err
		}
		out := f.screen(c.stdout, c.stderr)
		if typedOpts != nil {
			return explain(out.typedAnswer(ctx, agent, prompt, append(opts, typedOpts...)...), f.baseURL)
		}
		return explain(out.answer(ctx, agent, prompt, opts...), f.baseURL)
	}
}
