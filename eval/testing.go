package eval

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/robby-go/robby"
)

// The environment variables [Test] reads.
const (
	// EndpointEnv names the model endpoint; without it, Test skips.
	EndpointEnv = "OPENAI_BASE_URL"
	// RequireEnv, set to anything but empty, makes Test fail instead of skip
	// without an endpoint. It is for the CI job that must run the evals.
	RequireEnv = "ROBBY_EVAL_REQUIRE"
)

// Test runs d in a Go test, one subtest a case, so that `go test` runs a
// module's evals:
//
//	func TestEvals(t *testing.T) {
//		ds, err := eval.Load("testdata/cases.jsonl", nil)
//		if err != nil {
//			t.Fatal(err)
//		}
//		eval.Test(t, ds, func(t *testing.T) *robby.Agent { ... }, eval.WithRepeat(3))
//	}
//
// Without a model endpoint ($OPENAI_BASE_URL) t is skipped, unless
// $ROBBY_EVAL_REQUIRE is set: then it fails. Otherwise newAgent builds the
// agent (close it with t.Cleanup). The cases run as [Run] runs them, only those
// that -run selects. A case's subtest fails when its pass rate is under the
// threshold ([WithThreshold]), with every failure's reasons. It logs its
// figures either way. Test returns the report, for the caller to save or
// compare, or nil when nothing ran.
func Test(t *testing.T, d Dataset, newAgent func(t *testing.T) *robby.Agent, opts ...Option) *Report {
	t.Helper()
	if os.Getenv(EndpointEnv) == "" {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("no model endpoint: set %s (%s is set, so the evals must run)", EndpointEnv, RequireEnv)
		}
		t.Skipf("no model endpoint: set %s to run the evals (and %s to fail without one)", EndpointEnv, RequireEnv)
	}
	// Each case's subtest pauses (t.Parallel) until t's function returns:
	// by then the cases -run selected have run.
	results := make(map[string]*CaseReport, len(d.Cases))
	var selected []Case
	k := 0 // of pass^k, once the cases ran
	for _, c := range d.Cases {
		t.Run(c.Name, func(t *testing.T) {
			selected = append(selected, c)
			t.Parallel()
			checkCase(t, results[c.Name], k)
		})
	}
	if len(selected) == 0 {
		return nil
	}
	d.Cases = selected
	rep, err := Run(t.Context(), d, newAgent(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	k = rep.K
	for i := range rep.Cases {
		results[rep.Cases[i].Name] = &rep.Cases[i]
	}
	return rep
}

// checkCase fails t when c failed, and logs its figures.
func checkCase(t *testing.T, c *CaseReport, k int) {
	t.Helper()
	if c == nil {
		t.Fatal("the case did not run")
	}
	t.Logf("passed %d of %d runs: pass rate %.2f [%.2f, %.2f], pass^%d %.2f; %d tokens, p50 %.2fs",
		c.Passed, c.Runs, c.PassRate, c.PassRateLow, c.PassRateHigh, k, c.PassHatK, c.Usage.TotalTokens, c.LatencyP50)
	if c.OK {
		return
	}
	var b strings.Builder
	for _, f := range c.Failures {
		b.WriteString("\n  run " + strconv.Itoa(f.Run) + ": " + strings.Join(f.Reasons, "; "))
	}
	t.Errorf("pass rate %.2f is under the threshold:%s", c.PassRate, b.String())
}
