package eval_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/eval"
)

// TestSubtests runs a dataset as subtests against a scripted model, as a
// user's module would against a real one.
func TestSubtests(t *testing.T) {
	srv := flaky(t, 1, 1)
	t.Setenv(eval.EndpointEnv, srv.URL)
	rep := eval.Test(t, capitals(3), func(t *testing.T) *robby.Agent {
		return newAgent(t, srv, robby.WithBaseURL(os.Getenv(eval.EndpointEnv)))
	}, eval.WithRepeat(2))
	require.NotNil(t, rep)
	assert.True(t, rep.OK)
	assert.Equal(t, 6, rep.Runs)
}

// TestSubtestsHelper is run by TestSubtestsFailAndSkip in a process of its
// own: its failures are what that test checks.
func TestSubtestsHelper(t *testing.T) {
	if os.Getenv("EVAL_HELPER") == "" {
		t.Skip("run by TestSubtestsFailAndSkip")
	}
	srv := flaky(t, 1, 2)
	if os.Getenv("EVAL_HELPER") == "offline" {
		os.Unsetenv(eval.EndpointEnv)
	} else {
		os.Setenv(eval.EndpointEnv, srv.URL)
	}
	eval.Test(t, capitals(2), func(t *testing.T) *robby.Agent { return newAgent(t, srv) }, eval.WithRepeat(2))
}

// TestSubtestsFailAndSkip: a failing case fails its subtest with its
// reasons, -run selects cases, and without an endpoint the test skips,
// or fails when ROBBY_EVAL_REQUIRE says the evals must run.
func TestSubtestsFailAndSkip(t *testing.T) {
	helper := func(mode, run string, env ...string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run", run, "-test.v")
		cmd.Env = append(append(os.Environ(), "EVAL_HELPER="+mode), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := helper("online", "TestSubtestsHelper")
	assert.Error(t, err)
	assert.Contains(t, out, "--- FAIL: TestSubtestsHelper/case-0")
	assert.Contains(t, out, "--- FAIL: TestSubtestsHelper/case-1")
	assert.Contains(t, out, "pass rate 0.50 is under the threshold:")
	assert.Contains(t, out, `: contains: the answer "The capital is Bergen." does not contain "Oslo"`)
	assert.Contains(t, out, "passed 1 of 2 runs")

	out, err = helper("online", "TestSubtestsHelper/case-1$")
	assert.Error(t, err)
	assert.Contains(t, out, "--- FAIL: TestSubtestsHelper/case-1")
	assert.NotContains(t, out, "TestSubtestsHelper/case-0", "only the selected case runs")

	out, err = helper("offline", "TestSubtestsHelper")
	assert.NoError(t, err, out)
	assert.Contains(t, out, "--- SKIP: TestSubtestsHelper")
	assert.Contains(t, out, "no model endpoint: set OPENAI_BASE_URL")

	out, err = helper("offline", "TestSubtestsHelper", eval.RequireEnv+"=1")
	assert.Error(t, err)
	assert.Contains(t, out, "--- FAIL: TestSubtestsHelper")
}
