package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/trunc"
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

func chatCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := newCommand("chat", "robby chat [flags]",
		"Holds a conversation: one prompt a line from stdin, each answer streamed to stdout, tool steps to stderr.\n"+
			"Exits with status 1 if the last answer failed.",
		agentEnv, []string{storeEnv + "\tthe sessions' file, when -store is not given"})
	var f agentFlags
	f.kb.modes = true
	fs := cmd.fs
	f.register(fs)
	session := fs.String("session", "", "keep the conversation under this name in the store, across restarts")
	storePath := fs.String("store", defaultStorePath(), "SQLite file of the sessions (env "+storeEnv+")")
	if err := cmd.parse(args, stdout, stderr); err != nil {
		return err
	}
	agent, err := f.newAgent(stderr)
	if err != nil {
		return err
	}
	defer f.close()
	defer agent.Close()
	var opts []robby.RunOption // of every run
	if *session != "" {
		store, err := openStore(ctx, *storePath)
		if err != nil {
			return err
		}
		defer store.Close()
		opts = append(opts, robby.WithConversation(store, "", *session))
		if c, _, err := store.Load(ctx, "", *session); err == nil {
			fmt.Fprintf(stderr, "session %q: %d messages, last on %s.\n", *session, c.Messages, c.Updated.Local().Format("2006-01-02 15:04"))
		}
	}
	prompts := loadPromptCommands(ctx, agent, stderr)
	fmt.Fprintf(stderr, "robby chat with %s at %s; %d tools", f.model, f.baseURL, len(agent.Tools()))
	if len(prompts.names) > 0 {
		fmt.Fprintf(stderr, ", %d MCP prompts (/help)", len(prompts.names))
	}
	fmt.Fprintln(stderr, ". Ctrl-D to quit.")
	out := f.screen(stdout, stderr)
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	var last error // of the last answer, for the exit status
	for {
		fmt.Fprint(stderr, "› ")
		if !in.Scan() {
			fmt.Fprintln(stderr)
			if err := in.Err(); err != nil {
				return err
			}
			if last != nil {
				return shownError{last}
			}
			return nil
		}
		prompt := strings.TrimSpace(in.Text())
		if prompt == "" {
			continue
		}
		var err error
		if cmd, ok := strings.CutPrefix(prompt, "/"); ok && !strings.HasPrefix(cmd, "/") {
			err = prompts.run(ctx, cmd, in, out, opts...)
		} else {
			if ok {
				prompt = cmd // "//text" says "/text"
			}
			var kbOpts []robby.RunOption
			if kbOpts, err = f.kb.contextFor(ctx, f.kbase, prompt); err == nil {
				err = out.answer(ctx, agent, prompt, append(kbOpts, opts...)...)
			}
		}
		last = err
		if last != nil {
			if ctx.Err() != nil {
				return nil
			}
			// A failed answer leaves the conversation as it was (in a
			// session, with the error kept in its history): go on.
			report(stderr, explain(last, f.baseURL))
		}
	}
}

// A screen shows runs: each answer on stdout, its steps on stderr and,
// with -prices or -v, what it spent.
type screen struct {
	stdout, stderr io.Writer
	spent          bool         // say what each answer spent
	priced         bool         // and what it cost
	tree           *treePrinter // of -trace: each run's tree after its answer, nil without
}

func (f *agentFlags) screen(stdout, stderr io.Writer) *screen {
	priced := f.budget.prices != ""
	f.telemetry.tree.hold()
	return &screen{stdout: stdout, stderr: stderr, spent: priced || f.verbose, priced: priced, tree: f.telemetry.tree}
}

// answer streams one run: the answer to stdout, the steps to stderr.
func (s *screen) answer(ctx context.Context, agent *robby.Agent, prompt string, opts ...robby.RunOption) error {
	return s.show(agent.Stream(ctx, prompt, opts...))
}

// show shows a streamed run: the answer on stdout, the steps on stderr.
func (s *screen) show(run iter.Seq2[robby.Event, error]) error {
	stdout, stderr := s.stdout, s.stderr
	for ev, err := range run {
		switch ev.Kind {
		case robby.EventText:
			fmt.Fprint(stdout, ev.Delta)
		case robby.EventToolCall:
			fmt.Fprintf(stderr, "\n→ %s %s\n", ev.ToolCall.Name, ev.ToolCall.Arguments)
		case robby.EventToolResult:
			r := ev.ToolResult
			fmt.Fprintf(stderr, "← %s (%v): %s\n", r.Call.Name, r.Duration.Round(1e6), oneLine(r.Output, 200))
		case robby.EventCompaction:
			c := ev.Compaction
			fmt.Fprintf(stderr, "… conversation compacted (%s): %d turns left out, %d messages cut, %d → %d tokens of %d\n",
				c.Policy, c.TurnsDropped, c.MessagesCut, c.TokensBefore, c.TokensAfter, c.Budget)
		case robby.EventProgress:
			fmt.Fprintf(stderr, "… %s/%s %v/%v %s\n", ev.Notice.Server, ev.Notice.Tool, ev.Notice.Progress, ev.Notice.Total, ev.Notice.Message)
		case robby.EventDone:
			fmt.Fprintln(stdout)
			s.printSpent(ev.Result)
			s.tree.release()
			return err
		}
	}
	return nil
}

// printSpent says on stderr what a run's model requests used, and what
// they cost, if the screen says so.
func (s *screen) printSpent(res *robby.Result) {
	if !s.spent || res == nil {
		return
	}
	u := res.Usage
	fmt.Fprintf(s.stderr, "robby: %d model %s, %d tokens (%d in", res.Turns, plural(res.Turns, "request"),
		max(u.TotalTokens, u.PromptTokens+u.CompletionTokens), u.PromptTokens)
	if u.CachedPromptTokens > 0 {
		fmt.Fprintf(s.stderr, ", %d cached", u.CachedPromptTokens)
	}
	fmt.Fprintf(s.stderr, ", %d out)", u.CompletionTokens)
	if s.priced {
		fmt.Fprintf(s.stderr, ", cost %.6g", u.Cost)
	}
	fmt.Fprintln(s.stderr)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func oneLine(s string, n int) string {
	return trunc.Excerpt(strings.Join(strings.Fields(s), " "), n)
}
