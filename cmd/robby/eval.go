package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/eval"
)

// evalFlags are the flags of robby eval besides the agent's.
type evalFlags struct {
	repeat, concurrency, k int
	threshold              float64
	timeout                time.Duration
	out, baseline, html    string
	failOn, judgeModel     string
	progress               bool
}

func (f *evalFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.repeat, "repeat", 1, "runs of each case")
	fs.IntVar(&f.concurrency, "concurrency", eval.DefaultConcurrency, "runs at once at most")
	fs.IntVar(&f.k, "k", 0, "the k of pass^k, the chance that k runs in a row all pass (default -repeat)")
	fs.Float64Var(&f.threshold, "threshold", eval.DefaultThreshold, "the pass rate a case needs to pass")
	fs.DurationVar(&f.timeout, "timeout", 0, "bound on each run, such as 2m; 0 for none")
	fs.StringVar(&f.out, "o", "", "write the report as JSON to this `file`")
	fs.StringVar(&f.baseline, "baseline", "", "compare with the report in this JSON `file` (of -o)")
	fs.StringVar(&f.html, "html", "", "write the report as a self-contained web page to this `file`")
	fs.StringVar(&f.failOn, "fail-on", "failures", "exit status 1 on: failures (a case under -threshold, or a regression), "+
		"regressions (against -baseline only), never")
	fs.StringVar(&f.judgeModel, "judge-model", "", "the model of the checks {\"judge\": rubric}, at the same endpoint (default -model)")
	fs.BoolVar(&f.progress, "progress", true, "show a progress bar on stderr when it is a terminal")
}

func (f *evalFlags) check() error {
	switch {
	case f.repeat < 1:
		return fmt.Errorf("-repeat is %d: give 1 or more", f.repeat)
	case f.concurrency < 1:
		return fmt.Errorf("-concurrency is %d: give 1 or more", f.concurrency)
	case f.k < 0 || f.k > f.repeat:
		return fmt.Errorf("-k is %d: give at most -repeat (%d)", f.k, f.repeat)
	case f.threshold < 0 || f.threshold > 1:
		return fmt.Errorf("-threshold is %g: give a pass rate from 0 to 1", f.threshold)
	case f.failOn != "failures" && f.failOn != "regressions" && f.failOn != "never":
		return fmt.Errorf("bad -fail-on %q: give failures, regressions or never", f.failOn)
	case f.failOn == "regressions" && f.baseline == "":
		return errors.New("-fail-on regressions needs -baseline FILE")
	}
	return nil
}

var evalCommand = commandSpec{
	name: "eval", synopsis: "robby eval [flags] cases.jsonl|cases.yaml", takesArgs: true,
	summary: "run a dataset of cases (JSONL or YAML) on the agent and report how it did",
	about: "Runs each case of the dataset on the agent (-repeat times), scores the runs with the checks the file names,\n" +
		"prints a table, and writes the report (-o JSON, -html page). See docs/EVALS.md.\n" +
		"Without an endpoint (no -base-url, no OPENAI_BASE_URL), cases with a script in their metadata run against\n" +
		"a scripted model, in process. Exit status: 0 if every case passed (and none regressed), 1 if one failed\n" +
		"or regressed (as -fail-on says) or the eval could not run, 2 for a bad command line.",
	env: agentEnv, setup: setupEval,
}

func setupEval(c *command) func(context.Context) error {
	var (
		f  agentFlags
		sf schemaFlags
		ef evalFlags
	)
	f.register(c.fs)
	sf.register(c.fs, "a JSON Schema file: each answer must be JSON that fits it (compared with expected_value)")
	ef.register(c.fs)
	return func(ctx context.Context) error {
		if len(c.args) != 1 {
			c.usage(c.stderr)
			return usageError{fmt.Errorf("eval needs one dataset file, not %d", len(c.args))}
		}
		return evaluate(ctx, c, &f, &sf, &ef)
	}
}

// evaluate runs robby eval on the dataset c names.
func evaluate(ctx context.Context, c *command, f *agentFlags, sf *schemaFlags, ef *evalFlags) error {
	if err := ef.check(); err != nil {
		return usageError{err}
	}
	typed, err := sf.read()
	if err != nil {
		return err
	}
	e := &evalRun{flags: f, ef: ef, typed: typed, file: c.args[0], stdout: c.stdout, stderr: c.stderr}
	defer e.close()
	return e.run(ctx, endpointGiven(c.fs))
}

// endpointGiven reports whether the command line or the environment
// names an endpoint.
func endpointGiven(fs *flag.FlagSet) bool {
	return os.Getenv("OPENAI_BASE_URL") != "" || visited(fs, "base-url") != ""
}

// An evalRun is one robby eval: what it opened, to close.
type evalRun struct {
	flags          *agentFlags
	ef             *evalFlags
	typed          typedSpec
	file           string
	stdout, stderr io.Writer
	agent, judge   *robby.Agent
	script         *eval.Scripted
}

func (e *evalRun) close() {
	if e.judge != nil {
		e.judge.Close()
	}
	if e.agent != nil {
		e.agent.Close()
	}
	e.flags.close()
	if e.script != nil {
		e.script.Close()
	}
}

func (e *evalRun) run(ctx context.Context, endpoint bool) error {
	judgeURL := e.flags.baseURL
	if !endpoint {
		var err error
		if e.script, err = eval.LoadScripted(e.file); err != nil {
			return err
		}
		if e.script != nil {
			fmt.Fprintln(e.stderr, "robby: no endpoint given (-base-url, OPENAI_BASE_URL): the cases' scripts answer, in process")
			e.flags.baseURL, judgeURL = e.script.Model.URL, e.script.Judge.URL
			e.flags.extra = append(e.flags.extra, robby.WithTools(e.script.Tools()...))
		}
	}
	var err error
	if e.agent, err = e.flags.newAgent(e.stderr); err != nil {
		return err
	}
	if e.judge, err = e.newJudge(judgeURL); err != nil {
		return err
	}
	d, err := eval.Load(e.file, e.judge)
	if err != nil {
		return err
	}
	rep, err := eval.Run(ctx, d, e.agent, e.options()...)
	if err != nil {
		return explain(err, e.flags.baseURL)
	}
	return e.finish(rep)
}

// newJudge builds the agent of the judge checks: the agent's endpoint,
// key and prices, -judge-model or the agent's model.
func (e *evalRun) newJudge(baseURL string) (*robby.Agent, error) {
	model := e.ef.judgeModel
	if model == "" {
		model = e.flags.model
	}
	opts := []robby.Option{robby.WithBaseURL(baseURL), robby.WithAPIKey(e.flags.apiKey), robby.WithModel(model)}
	if e.flags.budget.prices != "" {
		prices, err := readPrices(e.flags.budget.prices)
		if err != nil {
			return nil, err
		}
		opts = append(opts, robby.WithPrices(prices))
	}
	if tp := e.flags.telemetry.provider; tp != nil {
		opts = append(opts, robby.WithTracerProvider(tp))
	}
	return robby.New(opts...)
}

// options are the eval's options from the flags.
func (e *evalRun) options() []eval.Option {
	ef := e.ef
	opts := []eval.Option{eval.WithRepeat(ef.repeat), eval.WithConcurrency(ef.concurrency), eval.WithThreshold(ef.threshold)}
	if ef.k > 0 {
		opts = append(opts, eval.WithPassK(ef.k))
	}
	if ef.timeout > 0 {
		opts = append(opts, eval.WithRunTimeout(ef.timeout))
	}
	if e.typed.schema != nil {
		opts = append(opts, eval.Typed[json.RawMessage](), eval.WithRunOptions(e.typed.options()...))
	}
	if tp := e.flags.telemetry.provider; tp != nil {
		opts = append(opts, eval.WithTracerProvider(tp))
	}
	if bar := newProgressBar(e.stderr); bar != nil && ef.progress {
		opts = append(opts, eval.WithProgress(bar.show))
	}
	return opts
}

// finish compares the report with the baseline, writes it where the
// flags say, prints the table and sets the exit status.
func (e *evalRun) finish(rep *eval.Report) error {
	ef := e.ef
	if ef.baseline != "" {
		base, err := readReport(ef.baseline)
		if err != nil {
			return err
		}
		eval.Compare(base, rep).Baseline = ef.baseline
	}
	if err := writeFile(ef.out, rep.WriteJSON); err != nil {
		return err
	}
	if err := writeFile(ef.html, rep.WriteHTML); err != nil {
		return err
	}
	if err := rep.WriteTable(e.stdout); err != nil {
		return err
	}
	regressed := rep.Comparison != nil && len(rep.Comparison.Regressed) > 0
	switch {
	case ef.failOn == "never":
		return nil
	case regressed:
		return shownError{fmt.Errorf("%d cases regressed", len(rep.Comparison.Regressed))}
	case ef.failOn == "failures" && !rep.OK:
		return shownError{fmt.Errorf("%d cases failed", rep.FailedCases)}
	}
	return nil
}

func readReport(path string) (*eval.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-baseline: %w", err)
	}
	defer f.Close()
	rep, err := eval.ReadReport(f)
	if err != nil {
		return nil, fmt.Errorf("-baseline %s: %w", path, err)
	}
	return rep, nil
}

// writeFile writes path with write, unless path is empty. A file half
// written is removed.
func writeFile(path string, write func(io.Writer) error) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = errors.Join(write(f), f.Close())
	if err != nil {
		os.Remove(path)
	}
	return err
}

// A progressBar redraws one line on a terminal.
type progressBar struct{ w io.Writer }

// newProgressBar returns a bar on w, or nil when w is not a terminal.
func newProgressBar(w io.Writer) *progressBar {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return &progressBar{w: w}
}

const barWidth = 30

func (b *progressBar) show(done, total int) {
	n := barWidth * done / total
	fmt.Fprintf(b.w, "\r[%s%s] %d/%d runs", strings.Repeat("=", n), strings.Repeat(" ", barWidth-n), done, total)
	if done == total {
		fmt.Fprint(b.w, "\r\033[K")
	}
}
