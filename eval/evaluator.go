package eval

import (
	"context"
	"time"

	"github.com/robby-go/robby"
)

// An Evaluator scores one run of a case. Implementations must be safe for
// concurrent use: the runs of a dataset are scored concurrently.
type Evaluator interface {
	// Name names the evaluator in reports, such as "contains".
	Name() string
	// Evaluate scores out. An error means the evaluator could not judge
	// (a judge that did not answer, say): the run fails with it.
	Evaluate(ctx context.Context, out *Output) (Score, error)
}

// A Score is an evaluator's verdict on one run.
type Score struct {
	// Value is between 0 (wrong) and 1 (right).
	Value float64
	// Pass says whether the run passes this evaluator.
	Pass bool
	// Reason says why, in a sentence a person reads.
	Reason string
	// Usage is what judging cost, for evaluators that call a model.
	Usage robby.Usage
}

// pass is a passing score of 1.
func pass(reason string) Score { return Score{Value: 1, Pass: true, Reason: reason} }

// fail is a failing score of 0.
func fail(reason string) Score { return Score{Reason: reason} }

// verdict is pass(yes) when ok, else fail(no).
func verdict(ok bool, yes, no string) Score {
	if ok {
		return pass(yes)
	}
	return fail(no)
}

// An Output is what one run of a case did, as evaluators see it.
type Output struct {
	// Case is the case run.
	Case *Case
	// Run numbers the run of the case, from 0.
	Run int
	// Text is the agent's answer.
	Text string
	// Value is the typed answer of a [Typed] run, nil otherwise.
	Value any
	// Result is what the run did: its messages, turns, tool calls and
	// usage. It is never nil.
	Result *robby.Result
	// Err is the run's error, nil when it answered.
	Err error
	// Duration is how long the run took, evaluators not counted.
	Duration time.Duration
}

// Func makes an evaluator of any Go function.
func Func(name string, fn func(ctx context.Context, out *Output) (Score, error)) Evaluator {
	return funcEvaluator{name: name, fn: fn}
}

type funcEvaluator struct {
	name string
	fn   func(ctx context.Context, out *Output) (Score, error)
}

func (f funcEvaluator) Name() string { return f.name }

func (f funcEvaluator) Evaluate(ctx context.Context, out *Output) (Score, error) {
	return f.fn(ctx, out)
}
