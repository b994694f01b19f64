package eval_test

import (
	"strings"
	"testing"

	"github.com/robby-go/robby/eval"
)

// The harness against the same runs in a plain loop: 100 cases, one run
// each, one at a time, each on a clone of the agent, checked for "Oslo".
// Allocations are the figure to compare; time them on a quiet machine.

func BenchmarkEval100Cases(b *testing.B) {
	srv := flaky(b, 1, 1)
	agent, d := newAgent(b, srv), capitals(100)
	b.ReportAllocs()
	for b.Loop() {
		rep, err := eval.Run(b.Context(), d, agent, eval.WithConcurrency(1))
		if err != nil || rep.Passed != 100 {
			b.Fatal(err, rep.Passed)
		}
	}
}

func BenchmarkPlainLoop100Cases(b *testing.B) {
	srv := flaky(b, 1, 1)
	agent, d := newAgent(b, srv), capitals(100)
	b.ReportAllocs()
	for b.Loop() {
		passed := 0
		for _, c := range d.Cases {
			res, err := agent.Clone().Run(b.Context(), c.Input)
			if err == nil && strings.Contains(res.Text, "Oslo") {
				passed++
			}
		}
		if passed != 100 {
			b.Fatal(passed)
		}
	}
}
