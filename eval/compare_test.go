package eval_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/eval"
)

// TestCompareFlagsARegressionNotNoise runs the same dataset three times:
// a model right every time (the baseline), one that lost one case
// entirely (a planted regression) and one as good as the baseline but
// for one unlucky run (noise).
func TestCompareFlagsARegressionNotNoise(t *testing.T) {
	run := func(right, of int, d eval.Dataset) *eval.Report {
		rep, err := eval.Run(t.Context(), d, newAgent(t, flaky(t, right, of)), eval.WithRepeat(6))
		require.NoError(t, err)
		return rep
	}
	d := capitals(3)
	baseline := run(1, 1, d)

	// The baseline goes through JSON, as a file would.
	var file bytes.Buffer
	require.NoError(t, baseline.WriteJSON(&file))
	baseline, err := eval.ReadReport(&file)
	require.NoError(t, err)

	// A regression: case-0's prompt changed so that the model now misses it.
	regressed := d
	regressed.Cases = append([]eval.Case(nil), d.Cases...)
	regressed.Cases[0].Evaluators = append(regressed.Cases[0].Evaluators, eval.Contains("Trondheim"))
	cmp := eval.Compare(baseline, run(1, 1, regressed))
	require.Len(t, cmp.Regressed, 1)
	assert.Equal(t, "case-0", cmp.Regressed[0].Name)
	assert.Equal(t, 6, cmp.Regressed[0].BaselinePassed)
	assert.Equal(t, 0, cmp.Regressed[0].Passed)
	assert.Less(t, cmp.Regressed[0].P, 0.01)
	assert.Empty(t, cmp.Improved)
	assert.Equal(t, 2, cmp.Unchanged)

	// Noise: 5 of 6 where 6 of 6 passed.
	noisy := run(5, 6, d)
	cmp = eval.Compare(baseline, noisy)
	assert.Empty(t, cmp.Regressed, "one failure in six is noise")
	assert.Equal(t, 3, cmp.Unchanged)
	assert.Same(t, cmp, noisy.Comparison)

	// The other way round, the regression is an improvement.
	cmp = eval.Compare(run(1, 1, regressed), baseline)
	require.Len(t, cmp.Improved, 1)
	assert.Equal(t, "case-0", cmp.Improved[0].Name)
}

// TestCompareAddedRemoved names the cases of one report only.
func TestCompareAddedRemoved(t *testing.T) {
	old := &eval.Report{Name: "old", Cases: []eval.CaseReport{{Name: "a"}, {Name: "gone"}}}
	now := &eval.Report{Name: "now", Cases: []eval.CaseReport{{Name: "a"}, {Name: "new"}}}
	cmp := eval.Compare(old, now)
	assert.Equal(t, []string{"new"}, cmp.Added)
	assert.Equal(t, []string{"gone"}, cmp.Removed)
	assert.Equal(t, "old", cmp.Baseline)
}

// TestReadReportRefusesNonsense: a baseline with impossible counts is
// refused, not compared.
func TestReadReportRefusesNonsense(t *testing.T) {
	for _, s := range []string{`nope`, `{"cases": [{"name": "a", "runs": 2, "passed": 3}]}`, `{"cases": [{"runs": 1}]}`} {
		_, err := eval.ReadReport(bytes.NewBufferString(s))
		assert.Error(t, err, s)
	}
}
