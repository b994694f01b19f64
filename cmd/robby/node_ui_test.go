package main

// The official clients of the chat stream protocols (npm ai's
// DefaultChatTransport and readUIMessageStream, @ag-ui/client's HttpAgent)
// against `robby serve` with a scripted model and a real MCP server's
// tools. See testdata/node_ui.mjs.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// requireWebUIModules returns node and the web UI packages that
// .ci/install-mcp.sh installs: without them the test is skipped, or fails
// under CI.
func requireWebUIModules(t *testing.T) (node, modules string) {
	t.Helper()
	s := requireNodeSDK(t)
	modules, err := filepath.Abs(filepath.Join("..", "..", ".bench", "webui", "node_modules"))
	require.NoError(t, err)
	for _, p := range []string{"ai", "@ag-ui/client"} {
		if _, err := os.Stat(filepath.Join(modules, p, "package.json")); err != nil {
			benchMissing(t, "npm %s is not installed: %v", p, err)
		}
	}
	return s.node, modules
}

// mcpConfig writes an mcpServers file naming server-everything.
func mcpConfig(t *testing.T) string {
	t.Helper()
	config := filepath.Join(t.TempDir(), "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{everythingServer(t), "stdio"}},
	}})
	require.NoError(t, os.WriteFile(config, b, 0o600))
	return config
}

func TestNodeUIClientsAgainstServe(t *testing.T) {
	node, modules := requireWebUIModules(t)
	const token = "ui-token"
	srv := upstream(t,
		// The Vercel AI SDK's chat: a tool with progress, another, the answer.
		robbytest.ToolCalls(robbytest.Call("trigger-long-running-operation", `{"duration":0.3,"steps":3}`)),
		robbytest.ToolCalls(robbytest.Call("echo", `{"message":"ping"}`)),
		robbytest.Text("Both tools ran.").WithUsage(40, 6),
		// Its next message: the history comes from the store.
		robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			return robbytest.Text("history of " + itoa(len(req.Messages)) + " messages")
		}),
		// The schema check: reasoning, a tool, text.
		robbytest.ToolCalls(robbytest.Call("echo", `{"message":"schema"}`)).WithReasoning("Echo first."),
		robbytest.Text("Checked."),
		// AG-UI.
		robbytest.ToolCalls(robbytest.Call("echo", `{"message":"from AG-UI"}`)),
		robbytest.Text("AG-UI done."),
	)
	base, serveLog := serveInProcess(t, "-base-url", srv.URL, "-model", "agent", "-token", token,
		"-store", filepath.Join(t.TempDir(), "chats.db"), "-mcp", mcpConfig(t))
	root := base[:len(base)-len("/v1")]
	sdk := nodeSDK{node: node}
	_, steps := sdk.run(t, serveLog, []string{"WEBUI_MODULES=" + modules}, "node_ui.mjs", root, token)

	type tool struct {
		Name, State string
		Input       map[string]any
		Output      any
	}
	v := nodeStep[struct {
		Types    []string
		Progress int
		Text     string
		Tools    []tool
		Metadata struct {
			Usage struct{ PromptTokens, CompletionTokens int }
		}
	}](t, steps, "vercel")
	assert.Equal(t, "Both tools ran.", v.Text)
	require.Len(t, v.Tools, 2)
	assert.Equal(t, "trigger-long-running-operation", v.Tools[0].Name)
	assert.Equal(t, "output-available", v.Tools[0].State)
	assert.Contains(t, v.Tools[0].Output, "Long running operation completed")
	assert.Equal(t, map[string]any{"message": "ping"}, v.Tools[1].Input)
	assert.Equal(t, "Echo: ping", v.Tools[1].Output)
	assert.GreaterOrEqual(t, v.Progress, 1, "the MCP server's progress came as data-progress parts")
	for _, want := range []string{"start", "start-step", "tool-input-start", "tool-input-available", "tool-output-available",
		"text-start", "text-delta", "text-end", "finish-step", "finish"} {
		assert.Contains(t, v.Types, want)
	}
	assert.Greater(t, v.Metadata.Usage.PromptTokens, 40, "the usage of every turn, in finish's metadata")

	v2 := nodeStep[struct{ Text string }](t, steps, "vercel2")
	assert.Equal(t, "history of 7 messages", v2.Text, "user, 2 calls and results, answer, user: from the store")

	schema := nodeStep[struct {
		Header  string
		Checked int
		Invalid []string
	}](t, steps, "schema")
	assert.Equal(t, "v1", schema.Header)
	assert.Greater(t, schema.Checked, 8)
	assert.Empty(t, schema.Invalid, "every part passes uiMessageChunkSchema")

	ag := nodeStep[struct {
		Types              []string
		Text, Args, Result string
		Messages           []struct {
			Role      string
			ToolCalls []string
		}
	}](t, steps, "agui")
	assert.Equal(t, "AG-UI done.", ag.Text)
	assert.JSONEq(t, `{"message":"from AG-UI"}`, ag.Args)
	assert.Equal(t, "Echo: from AG-UI", ag.Result)
	assert.Equal(t, "RUN_STARTED", ag.Types[0])
	assert.Contains(t, ag.Types, "TOOL_CALL_END")
	assert.Equal(t, "RUN_FINISHED", ag.Types[len(ag.Types)-1])
	var roles []string
	for _, m := range ag.Messages {
		roles = append(roles, m.Role)
	}
	assert.Equal(t, []string{"user", "assistant", "tool", "assistant"}, roles, "HttpAgent built the conversation from the events")
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
