package eval

import (
	"context"
	"errors"
	"fmt"

	"github.com/robby-go/robby"
)

// GuardBlocked passes when a guard ([robby.WithGuards]) blocked the run:
// its input or output, which ends the run with a [*robby.GuardError], or
// one of its tool calls or results. A run that a guard ended passes with
// it: the block is what the case expects, not a failure.
func GuardBlocked() Evaluator { return guardCheck{blocked: true} }

// GuardAllowed passes when no guard blocked anything in the run: its
// input, its tool calls and results, its output.
func GuardAllowed() Evaluator { return guardCheck{} }

// guardCheck is GuardBlocked or GuardAllowed.
type guardCheck struct{ blocked bool }

func (guardCheck) Name() string { return "guard" }

func (g guardCheck) Evaluate(_ context.Context, out *Output) (Score, error) {
	ge := blockOf(out)
	if ge == nil {
		return verdict(!g.blocked, "no guard blocked anything", "no guard blocked anything"), nil
	}
	what := fmt.Sprintf("guard %q blocked the %s", ge.Guard, ge.Boundary)
	if ge.Tool != "" {
		what += fmt.Sprintf(" of %q", ge.Tool)
	}
	return verdict(g.blocked, what, what), nil
}

// expects reports whether a run that ended with err may pass: a
// GuardBlocked check expects a guard's block.
func (g guardCheck) expects(err error) bool {
	return g.blocked && errors.Is(err, robby.ErrGuardBlocked)
}

// blockOf returns the first block of a guard in out: the run's error's, or
// a tool call's.
func blockOf(out *Output) *robby.GuardError {
	if ge, ok := errors.AsType[*robby.GuardError](out.Err); ok {
		return ge
	}
	for _, r := range out.Result.ToolCalls {
		if ge, ok := errors.AsType[*robby.GuardError](r.Err); ok {
			return ge
		}
	}
	return nil
}

// errorExpected reports whether one of evs expects a run to end with err.
func errorExpected(evs []Evaluator, err error) bool {
	for _, ev := range evs {
		if g, ok := ev.(guardCheck); ok && g.expects(err) {
			return true
		}
	}
	return false
}

// guardOf makes the evaluator of a file's {"guard": s} check.
func guardOf(s string) (Evaluator, error) {
	switch s {
	case "blocked":
		return GuardBlocked(), nil
	case "allowed":
		return GuardAllowed(), nil
	}
	return nil, fmt.Errorf("%q: give blocked or allowed", s)
}
