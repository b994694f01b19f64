package eval

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/robby-go/robby"
)

// An Option changes how [Run] runs a dataset.
type Option func(*config) error

// Defaults of the options.
const (
	DefaultRepeat      = 1
	DefaultConcurrency = 4
	DefaultThreshold   = 1.0
)

type config struct {
	repeat, concurrency, k int
	threshold              float64
	timeout                time.Duration
	runOpts                []robby.RunOption
	typed                  typedRun // nil for text runs
	tracer                 trace.Tracer
	progress               func(done, total int)
}

// typedRun runs prompt for a typed answer, as robby.RunTyped does.
type typedRun func(ctx context.Context, a *robby.Agent, prompt string, opts ...robby.RunOption) (any, *robby.Result, error)

func newConfig(opts []Option) (*config, error) {
	c := &config{repeat: DefaultRepeat, concurrency: DefaultConcurrency, threshold: DefaultThreshold}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, fmt.Errorf("eval: %w", err)
		}
	}
	if c.k == 0 {
		c.k = c.repeat
	}
	if c.k > c.repeat {
		return nil, fmt.Errorf("eval: pass^%d needs at least %d runs a case, not %d (WithRepeat)", c.k, c.k, c.repeat)
	}
	return c, nil
}

// WithRepeat runs each case n times (default 1): agents are not
// deterministic, and the pass rate of one run says little.
func WithRepeat(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("WithRepeat(%d): at least 1", n)
		}
		c.repeat = n
		return nil
	}
}

// WithConcurrency runs at most n runs at once (default 4).
func WithConcurrency(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("WithConcurrency(%d): at least 1", n)
		}
		c.concurrency = n
		return nil
	}
}

// WithPassK sets the k of pass^k, at most the runs of each case
// (default: all of them, as [WithRepeat] says).
func WithPassK(k int) Option {
	return func(c *config) error {
		if k < 1 {
			return fmt.Errorf("WithPassK(%d): at least 1", k)
		}
		c.k = k
		return nil
	}
}

// WithThreshold sets the pass rate a case needs to pass (default 1: every
// run). A report is OK when every case passed.
func WithThreshold(rate float64) Option {
	return func(c *config) error {
		if rate < 0 || rate > 1 {
			return fmt.Errorf("WithThreshold(%g): between 0 and 1", rate)
		}
		c.threshold = rate
		return nil
	}
}

// WithRunTimeout bounds each run (default: no bound but the context's).
// A run that takes longer fails with [context.DeadlineExceeded].
func WithRunTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("WithRunTimeout(%v): positive", d)
		}
		c.timeout = d
		return nil
	}
}

// WithRunOptions gives every run these options, such as
// [robby.WithAnswerSchema] or [robby.WithRunParams].
func WithRunOptions(opts ...robby.RunOption) Option {
	return func(c *config) error {
		c.runOpts = append(c.runOpts, opts...)
		return nil
	}
}

// Typed makes every run typed: [robby.RunTyped] with T. Its value is the Output's Value, compared with
// the case's ExpectedValue by [EqualsExpectedValue]. Every case needs an Input.
func Typed[T any]() Option {
	return func(c *config) error {
		c.typed = func(ctx context.Context, a *robby.Agent, prompt string, opts ...robby.RunOption) (any, *robby.Result, error) {
			v, res, err := robby.RunTyped[T](ctx, a, prompt, opts...)
			if err != nil {
				return nil, res, err
			}
			return v, res, nil
		}
		return nil
	}
}

// WithTracerProvider traces the eval with OpenTelemetry. The eval gets a span ("eval {dataset}", or
// "eval" for a dataset without a name). Under it, each case gets one ("eval_case {case}"), and each of
// its runs one ("eval_run {case}"). Under each run, each evaluator gets one ("evaluate {evaluator}"). An
// agent traced with the same provider ([robby.WithTracerProvider]) puts its own spans (invoke_agent,
// chat, execute_tool) under the run's.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) error {
		if tp == nil {
			return errors.New("WithTracerProvider: nil provider")
		}
		c.tracer = tp.Tracer(instrumentationName)
		return nil
	}
}

// WithProgress calls fn after each run, with the runs done and their
// total, one call at a time.
func WithProgress(fn func(done, total int)) Option {
	return func(c *config) error {
		c.progress = fn
		return nil
	}
}

// instrumentationName names the eval's tracer.
const instrumentationName = "github.com/robby-go/robby/eval"
