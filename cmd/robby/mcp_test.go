package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// everythingServer returns the path of the reference server-everything that
// .ci/install-mcp.sh installs, skipping the test (failing it under CI) when
// it or node is missing.
func everythingServer(t *testing.T) string {
	t.Helper()
	path, err := filepath.Abs("../../.bench/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	require.NoError(t, err)
	_, statErr := os.Stat(path)
	_, nodeErr := exec.LookPath("node")
	if statErr != nil || nodeErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("server-everything or node missing (run bash .ci/install-mcp.sh): %v %v", statErr, nodeErr)
		}
		t.Skip("server-everything or node missing: run bash .ci/install-mcp.sh")
	}
	return path
}

// TestServeWithMCPTools is the endpoint as a chat front end sees it: a
// client streams a question, and the agent answers with the help of a real
// MCP server's tool, run on the server side.
func TestServeWithMCPTools(t *testing.T) {
	config := filepath.Join(t.TempDir(), "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{everythingServer(t), "stdio"}},
	}})
	require.NoError(t, os.WriteFile(config, b, 0o600))
	srv := upstream(t,
		robbytest.ToolCalls(robbytest.Call("echo", `{"message":"ping from the model"}`)),
		robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			last := req.Messages[len(req.Messages)-1]
			return robbytest.Text("The server said: " + last.Content)
		}),
	)

	base, _ := serveInProcess(t, "-base-url", srv.URL, "-model", "agent", "-mcp", config)
	assert.Equal(t, "The server said: Echo: ping from the model", streamFrom(t, base, "none", "echo something"))
	assert.Contains(t, srv.Requests()[0].Tools, "echo", "the MCP server's tools are offered")
}
