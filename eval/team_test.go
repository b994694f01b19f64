package eval_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/eval"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/robbytest/agenttest"
)

// team is triage, which hands every question over to billing, and billing,
// which answers, on one scripted model that tells them by system prompt.
func team(t *testing.T) *robby.Agent {
	srv := agenttest.NewServer(t)
	srv.Fallback(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		if strings.Contains(req.Messages[0].Content, "route") {
			return robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"a refund"}`))
		}
		return robbytest.Text("Order 7 is refunded.")
	}))
	billing := agenttest.New(t, srv, robby.WithName("billing"), robby.WithDescription("Refunds"),
		robby.WithSystem("You handle refunds."))
	return agenttest.New(t, srv, robby.WithName("triage"), robby.WithSystem("You route the user."),
		robby.WithHandoffs(robby.Handoff{To: "billing"}), robby.WithTeam(billing))
}

// TestTeamChecks runs a dataset file's agent and handoff checks on a team:
// those that name billing pass, those that name triage fail and say who
// answered and to whom the run handed over.
func TestTeamChecks(t *testing.T) {
	path := writeFile(t, "team.jsonl",
		`{"name": "billing", "input": "A refund for order 7, please.", "checks": [{"agent": "billing"}, {"handoff": "billing"}, {"contains": "refunded"}]}`+"\n"+
			`{"name": "triage", "input": "A refund for order 7, please.", "checks": [{"agent": "triage"}, {"handoff": "triage"}]}`+"\n")
	d, err := eval.Load(path, nil)
	require.NoError(t, err)
	rep, err := eval.Run(t.Context(), d, team(t), eval.WithConcurrency(1))
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
