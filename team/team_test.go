package team_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/team"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const teamJSON = `{"root": "triage",
 "agents": {
   "triage":  {"description": "Routes the user", "instructions": "You route.", "handoffs": ["billing"]},
   "billing": {"description": "Refunds and invoices", "instructions": "You bill.", "model": "billing-model",
               "handoffs": [{"to": "triage", "history": "none"}], "agentTools": ["lookup"], "maxTurns": 3},
   "lookup":  {"description": "Finds an order"}}}`

const teamYAML = `root: triage
agents:
  triage:
    description: Routes the user
    instructions: You route.
    handoffs: [billing]
  billing:
    description: Refunds and invoices
    instructions: You bill.
    model: billing-model
    maxTurns: 3
    agentTools: [lookup]
    handoffs:
      - to: triage
        history: none
  lookup:
    description: Finds an order
`

func TestParseJSONAndYAML(t *testing.T) {
	j, err := team.Parse("team.json", []byte(teamJSON))
	require.NoError(t, err)
	y, err := team.Parse("team.yaml", []byte(teamYAML))
	require.NoError(t, err)
	assert.Equal(t, j.Root, y.Root)
	assert.Equal(t, j.Agents, y.Agents)
	assert.Equal(t, []team.Handoff{{To: "triage", History: "none"}}, j.Agents["billing"].Handoffs)
	assert.Equal(t, []team.Handoff{{To: "billing"}}, j.Agents["triage"].Handoffs)
}

func TestErrorsNameFileAgentAndField(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{`{"root": "x", "agents": {"a": {}}}`, `team file t.json: root: "x" is not one of the agents`},
		{`{"agents": {"a": {}}}`, `team file t.json: root: no root agent`},
		{`{"root": "a", "agents": {"a": {"handoffs": ["sales"]}}}`, `team file t.json: agent "a": handoffs: "sales" is not one of the agents`},
		{`{"root": "a", "agents": {"a": {"handoffs": [{"to": "b", "history": "most"}]}, "b": {}}}`,
			`team file t.json: agent "a": handoffs: history "most" of the handoff to "b": give all, summary or none`},
		{`{"root": "a", "agents": {"a": {}, "b": {"agentTools": ["c"]}, "c": {"agentTools": ["b"]}}}`,
			`team file t.json: agent "b": agentTools: agents call each other as tools in a circle: [b c b]`},
		{`{"root": "a", "agents": {"a": {}, "b": {"agentTools": ["a"]}}}`, `agent "b": agentTools: "a" is the root`},
		{`{"root": "a", "agents": {"a": {"instructons": "typo"}}}`, `team file t.json: yaml: unmarshal errors:`},
	} {
		_, err := team.Parse("t.json", []byte(tc.file))
		require.Error(t, err, tc.file)
		assert.Contains(t, err.Error(), tc.want)
	}
	_, err := team.Parse("t.json", []byte(`{"root": "a", "agents": {"a": {"handoffs": ["a"]}}}`))
	var te *team.Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, team.Error{Path: "t.json", Agent: "a", Field: "handoffs", Err: te.Err}, *te)
}

func TestBuildRunsTheTeam(t *testing.T) {
	srv := robbytest.NewServer()
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "team.yaml")
	require.NoError(t, os.WriteFile(path, []byte(teamYAML), 0o600))
	f, err := team.Load(path)
	require.NoError(t, err)
	tm, err := f.Build(t.Context(), []robby.Option{robby.WithBaseURL(srv.URL), robby.WithAPIKey(""), robby.WithModel("default-model"),
		robby.WithSystem("Default system.")}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { tm.Close() })
	srv.Reply(robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"refund"}`)),
		robbytest.ToolCalls(robbytest.Call("lookup", `{"prompt":"order 7"}`)), robbytest.Text("Order 7: 20 EUR."),
		robbytest.Text("Refunded 20 EUR."))
	res, err := tm.Root.Run(t.Context(), "Refund order 7")
	require.NoError(t, err)
	assert.Equal(t, "billing", res.Agent)
	reqs := srv.Requests()
	require.Len(t, reqs, 4)
	assert.Equal(t, "default-model", reqs[0].Model)
	assert.Equal(t, "You route.", reqs[0].Messages[0].Content)
	assert.Equal(t, "billing-model", reqs[1].Model)
	assert.ElementsMatch(t, []string{"lookup", "transfer_to_triage"}, reqs[1].Tools)
	assert.Equal(t, "Default system.", reqs[2].Messages[0].Content, "lookup keeps the default system prompt")
	assert.Equal(t, robby.DefaultMaxTurns, tm.Root.Limits().MaxTurns, "the root keeps the default turn limit")
}

func TestBuildMissingServer(t *testing.T) {
	f, err := team.Parse("t.json", []byte(`{"root": "a", "agents": {"a": {"mcpServers": ["payments"]}}}`))
	require.NoError(t, err)
	_, err = f.Build(t.Context(), []robby.Option{robby.WithBaseURL("http://localhost:1/v1"), robby.WithModel("m")}, nil)
	require.ErrorIs(t, err, team.ErrNoServer)
	assert.Contains(t, err.Error(), `team file t.json: agent "a": mcpServers: team: no such MCP server "payments"`)
	assert.True(t, errors.Is(err, team.ErrNoServer))
}
