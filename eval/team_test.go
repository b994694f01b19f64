package eval_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/eval"
	"github.com/robby-go/robby/robbytest/agenttest"
)

// TestTeamChecks runs a dataset file's agent and handoff checks on a team:
// those that name billing pass, those that name triage fail and say who
// answered and to whom the run handed over.
func TestTeamChecks(t *testing.T) {
	path := writeFile(t, "team.jsonl",
		`{"name": "billing", "input": "A refund for order 7, please.", "checks": [{"agent": "billing"}, {"handoff": "billing"}, {"contains": "refunded"}]}`+"\n"+
			`{"name": "triage", "input": "A refund for order 7, please.", "checks": [{"agent": "triage"}, {"handoff": "triage"}]}`+"\n")
	d, err := eval.Load(path, nil)
	require.NoError(t, err)
	rep, err := eval.Run(t.Context(), d, agenttest.NewTeam(t), eval.WithConcurrency(1))
	require.NoError(t, err)
	require.Len(t, rep.Cases, 2)
	assert.True(t, rep.Cases[0].OK, "%+v", rep.Cases[0])
	require.False(t, rep.Cases[1].OK)
	require.NotEmpty(t, rep.Cases[1].Failures)
	assert.Equal(t, []string{"agent: billing answered, not triage", "handoff: handed over to billing, not triage"},
		rep.Cases[1].Failures[0].Reasons)

	for _, bad := range []string{`{"agent": ""}`, `{"handoff": 3}`} {
		_, err := eval.Load(writeFile(t, "bad.jsonl", `{"input": "hi", "checks": [`+bad+`]}`+"\n"), nil)
		assert.Error(t, err, bad)
	}
}
