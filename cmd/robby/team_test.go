package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// teamFile writes a team of triage and billing, and returns its path.
func teamFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "team.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"root": "triage", "agents": {
		"triage":  {"description": "Routes the user", "instructions": "You route.", "handoffs": ["billing"]},
		"billing": {"description": "Refunds and invoices", "instructions": "You bill.", "handoffs": ["triage"]}}}`), 0o600))
	return path
}

func TestRunWithATeam(t *testing.T) {
	srv := upstream(t, robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"a refund"}`)),
		robbytest.Text("Refunded."))
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"run", "-base-url", srv.URL, "-model", "m", "-system", "Default.", "-agents", teamFile(t),
		"Refund order 7"}, nil, &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	assert.Equal(t, "Refunded.\n", stdout.String())
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "You route.", reqs[0].Messages[0].Content)
	assert.Equal(t, []string{"transfer_to_billing"}, reqs[0].Tools)
	assert.Equal(t, "You bill.", reqs[1].Messages[0].Content)
}

func TestTeamFileErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "team.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"root": "a", "agents": {"a": {"mcpServers": ["payments"]}}}`), 0o600))
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"run", "-base-url", "http://127.0.0.1:1/v1", "-model", "m", "-agents", path, "hi"},
		nil, &stdout, &stderr)
	require.Error(t, err)
	assert.Equal(t, 1, exitCode(err, &stderr))
	assert.Contains(t, stderr.String(), `team file `+path+`: agent "a": mcpServers: team: no such MCP server "payments"`)
	err = run(t.Context(), []string{"worker", "-temporal", "127.0.0.1:1", "-agents", path}, nil, &stdout, &stderr)
	assert.ErrorContains(t, err, `agent "a": mcpServers: team: no such MCP server "payments"`, "the worker checks the file too")
}
