package main

import (
	"context"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/trunc"
)

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
