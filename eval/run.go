package eval

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/robby-go/robby"
)

// ErrDataset is the error of a dataset that cannot run: no case, a case
// without a name, or two of the same name.
var ErrDataset = errors.New("eval: bad dataset")

// Run runs every case of d on agent, as the options say, and reports how they
// did. Each run has a clone of agent of its own ([robby.Agent.Clone]); the
// agent is not closed. A run that fails is a failing run, not an error. The
// error is that of options or a dataset that cannot run, or ctx's. It comes
// with the report of the runs done.
//
// Run is safe for concurrent use, as the agent and evaluators must be.
func Run(ctx context.Context, d Dataset, agent *robby.Agent, opts ...Option) (*Report, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if err := d.check(cfg); err != nil {
		return nil, err
	}
	h := &harness{cfg: cfg, d: &d, agent: agent, records: make([][]record, len(d.Cases))}
	return h.run(ctx)
}

// check reports a dataset that cannot run.
func (d *Dataset) check(cfg *config) error {
	if len(d.Cases) == 0 {
		return fmt.Errorf("%w: no case", ErrDataset)
	}
	seen := make(map[string]bool, len(d.Cases))
	for i, c := range d.Cases {
		switch {
		case c.Name == "":
			return fmt.Errorf("%w: case %d has no name", ErrDataset, i+1)
		case seen[c.Name]:
			return fmt.Errorf("%w: two cases named %q", ErrDataset, c.Name)
		case c.Input == "" && len(c.Messages) == 0:
			return fmt.Errorf("%w: case %q has no input", ErrDataset, c.Name)
		case c.Input == "" && cfg.typed != nil:
			return fmt.Errorf("%w: case %q has no input, which a typed run needs", ErrDataset, c.Name)
		}
		seen[c.Name] = true
	}
	return nil
}

// A harness runs one dataset.
type harness struct {
	cfg     *config
	d       *Dataset
	agent   *robby.Agent
	records [][]record // by case, then run

	mu   sync.Mutex // serializes progress
	done int
}

// A record is one run, scored.
type record struct {
	out    Output
	scores []namedScore
	pass   bool
}

type namedScore struct {
	name string
	Score
	err error
}

func (h *harness) run(ctx context.Context) (*Report, error) {
	started := time.Now()
	ctx, span := h.startSpan(ctx, strings.TrimSpace("eval "+h.d.Name))
	cases := make([]caseSpan, len(h.d.Cases))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(h.cfg.concurrency)
	for ci := range h.d.Cases {
		h.records[ci] = make([]record, h.cfg.repeat)
		cases[ci].remaining = h.cfg.repeat
		for ri := range h.cfg.repeat {
			g.Go(func() error {
				cctx := cases[ci].start(gctx, h, ci)
				h.records[ci][ri] = h.runOnce(cctx, ci, ri)
				cases[ci].end(h.records[ci][ri].pass)
				h.progress()
				return nil
			})
		}
	}
	g.Wait()
	rep := h.report(started)
	endSpan(span, rep.OK, nil)
	return rep, ctx.Err()
}

func (h *harness) progress() {
	if h.cfg.progress == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done++
	h.cfg.progress(h.done, len(h.d.Cases)*h.cfg.repeat)
}

// runOnce runs case ci once, as run ri, and scores it.
func (h *harness) runOnce(ctx context.Context, ci, ri int) record {
	c := &h.d.Cases[ci]
	ctx, span := h.startSpan(ctx, "eval_run "+c.Name, runAttrs(c.Name, ri)...)
	out := h.agentRun(ctx, c, ri)
	evs := h.d.evaluators(c)
	rec := record{out: out, pass: out.Err == nil || errorExpected(evs, out.Err)}
	for _, ev := range evs {
		s := h.evaluate(ctx, ev, &rec.out)
		rec.pass = rec.pass && s.err == nil && s.Pass
		rec.scores = append(rec.scores, s)
	}
	endSpan(span, rec.pass, out.Err)
	return rec
}

// agentRun runs c on a clone of the agent.
func (h *harness) agentRun(ctx context.Context, c *Case, ri int) Output {
	if h.cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.cfg.timeout)
		defer cancel()
	}
	a := h.agent.Clone()
	a.AddMessages(c.Messages...)
	out := Output{Case: c, Run: ri}
	start := time.Now()
	switch {
	case h.cfg.typed != nil:
		out.Value, out.Result, out.Err = h.cfg.typed(ctx, a, c.Input, h.cfg.runOpts...)
	case c.Input == "":
		out.Result, out.Err = a.Resume(ctx, h.cfg.runOpts...)
	default:
		out.Result, out.Err = a.Run(ctx, c.Input, h.cfg.runOpts...)
	}
	out.Duration = time.Since(start)
	if out.Result == nil { // robby promises one; stay safe with wrappers
		out.Result = new(robby.Result)
	}
	out.Text = out.Result.Text
	return out
}

// evaluate scores out with ev, in a span of its own. A panicking
// evaluator fails the run instead of the eval.
func (h *harness) evaluate(ctx context.Context, ev Evaluator, out *Output) (s namedScore) {
	s.name = ev.Name()
	ctx, span := h.startSpan(ctx, "evaluate "+s.name)
	defer func() {
		if p := recover(); p != nil {
			s.Score, s.err = Score{}, fmt.Errorf("evaluator %s panicked: %v", s.name, p)
		}
		if s.err != nil {
			s.Reason = s.err.Error()
		}
		endScoreSpan(span, s)
	}()
	s.Score, s.err = ev.Evaluate(ctx, out)
	return s
}

// A caseSpan is the span of a case, from its first run's start to its
// last run's end.
type caseSpan struct {
	once      sync.Once
	ctx       context.Context
	span      trace.Span
	mu        sync.Mutex
	remaining int
	passed    int
}

func (cs *caseSpan) start(ctx context.Context, h *harness, ci int) context.Context {
	cs.once.Do(func() {
		name := h.d.Cases[ci].Name
		cs.ctx, cs.span = h.startSpan(ctx, "eval_case "+name, caseAttrs(name)...)
	})
	return cs.ctx
}

func (cs *caseSpan) end(pass bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.remaining--
	if pass {
		cs.passed++
	}
	if cs.remaining == 0 && cs.span != nil {
		endCaseSpan(cs.span, cs.passed)
	}
}
