package main

import (
	"context"
	"errors"
	"io"
	"strings"
)

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := newCommand("run", `robby run [flags] "prompt"`,
		"Streams the agent's answer to the prompt to stdout; its tool steps go to stderr.\n"+
			"With -schema FILE, prints only the answer: one line of JSON that fits the schema, ready for jq.", agentEnv)
	var f agentFlags
	var sf schemaFlags
	var d durableFlags
	f.kb.modes = true
	f.register(cmd.fs)
	sf.register(cmd.fs, "a JSON Schema file: print only the answer, JSON validated against it, on stdout")
	d.register(cmd.fs, "HOST:PORT of a Temporal frontend: run durably, on a 'robby worker' (which has the model flags and keys)")
	id := cmd.fs.String("workflow-id", "", "with -temporal: the durable run's ID, to name it or to re-attach to it")
	if err := cmd.parse(args, stdout, stderr); err != nil {
		return err
	}
	if d.addr != "" {
		if cmd.fs.NArg() == 0 && *id == "" {
			cmd.usage(stderr)
			return usageError{errors.New("run needs a prompt")}
		}
		schema, err := sf.durable(cmd.fs)
		if err != nil {
			return err
		}
		return durableRun(ctx, &d, *id, strings.Join(cmd.fs.Args(), " "), schema, stdout, stderr)
	}
	typed, err := sf.read()
	if err != nil {
		return err
	}
	typedOpts := typed.options()
	fs := cmd.fs
	if fs.NArg() == 0 {
		cmd.usage(stderr)
		return usageError{errors.New("run needs a prompt")}
	}
	agent, err := f.newAgent(stderr)
	if err != nil {
		return err
	}
	defer f.close()
	defer agent.Close()
	prompt := strings.Join(fs.Args(), " ")
	opts, err := f.kb.contextFor(ctx, f.kbase, prompt)
	if err != nil {
		return err
	}
	out := f.screen(stdout, stderr)
	if typedOpts != nil {
		return explain(out.typedAnswer(ctx, agent, prompt, append(opts, typedOpts...)...), f.baseURL)
	}
	return explain(out.answer(ctx, agent, prompt, opts...), f.baseURL)
}
