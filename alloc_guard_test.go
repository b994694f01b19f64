//go:build !race

package robby_test

import (
	"context"
	"testing"
)

// The 3-turn conversation's allocations (BenchmarkRun3Turns: two parallel
// tool calls, one call, the answer), recorded in docs/BENCHMARKS.md. They
// are stable where times are not: a change that adds some fails here.
// The race detector changes them, so the guard runs without it (.ci/run).
const (
	run3Allocs         = 625 // the agent reused
	run3AllocsNewAgent = 669 // an agent built per conversation
	allocMargin        = 0.04
)

func TestRun3TurnsAllocations(t *testing.T) {
	ctx := context.Background()
	srv := newRun3Server(t)
	tools := benchRobbyTools()
	a := newRun3Agent(t, srv.URL, tools)
	reused := testing.AllocsPerRun(20, func() {
		a.Reset()
		robbyRun3(t, ctx, a)
	})
	built := testing.AllocsPerRun(20, func() { robbyRun3(t, ctx, newRun3Agent(t, srv.URL, tools)) })
	t.Logf("allocations a conversation: %.0f reused, %.0f with a new agent", reused, built)
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"agent reused", reused, run3Allocs}, {"new agent", built, run3AllocsNewAgent}} {
		if limit := c.want * (1 + allocMargin); c.got > limit {
			t.Errorf("%s: %.0f allocations a conversation, over the recorded %.0f (+%.0f%%): profile with go test -run '^$' -bench Run3Turns -memprofile", c.name, c.got, c.want, allocMargin*100)
		}
	}
}
