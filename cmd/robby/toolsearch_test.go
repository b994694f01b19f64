package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// TestRunToolSearch runs robby run -tool-search on server-everything: the
// first request offers search_tools alone, the model finds get-sum and
// calls it.
func TestRunToolSearch(t *testing.T) {
	srv := upstream(t,
		robbytest.ToolCalls(robbytest.Call("search_tools", `{"query":"add two numbers"}`)),
		robbytest.ToolCalls(robbytest.Call("get-sum", `{"a":19,"b":23}`)),
		robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			return robbytest.Text("The sum: " + req.Messages[len(req.Messages)-1].Content)
		}),
	)
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"run", "-base-url", srv.URL, "-model", "m", "-mcp", mcpConfig(t), "-tool-search", "19 + 23?"},
		nil, &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	assert.Contains(t, stdout.String(), "The sum: ")
	assert.Contains(t, stdout.String(), "42")
	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, []string{"search_tools"}, reqs[0].Tools)
	assert.Contains(t, reqs[1].Tools, "get-sum")
}

// TestDeferLoadingInTheMCPFile: "deferLoading": true defers one server's
// tools and leaves the other's offered.
func TestDeferLoadingInTheMCPFile(t *testing.T) {
	config := filepath.Join(t.TempDir(), "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"deferred": map[string]any{"command": "node", "args": []string{everythingServer(t), "stdio"}, "deferLoading": true},
		"offered":  map[string]any{"command": "node", "args": []string{everythingServer(t), "stdio"}, "allow": []string{"echo"}},
	}})
	require.NoError(t, os.WriteFile(config, b, 0o600))
	srv := upstream(t, robbytest.Text("Hello."))
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"run", "-base-url", srv.URL, "-model", "m", "-mcp", config, "hello"}, nil, &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	assert.Equal(t, []string{"offered__echo", "search_tools"}, srv.Requests()[0].Tools)
}

func TestToolSearchNeedsMCP(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"run", "-base-url", "http://127.0.0.1:1/v1", "-tool-search", "hi"}, nil, &stdout, &stderr)
	require.ErrorContains(t, err, "-tool-search defers the tools of -mcp's servers: give -mcp too")
}

// TestRunSkills: robby run -skills lists the skills in the system prompt,
// names the malformed one on stderr, and the model loads a skill.
func TestRunSkills(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"csv/SKILL.md":    "---\nname: csv\ndescription: Clean CSV files.\n---\nUse commas.\n",
		"broken/SKILL.md": "no front matter\n",
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600))
	}
	srv := upstream(t,
		robbytest.ToolCalls(robbytest.Call("load_skill", `{"name":"csv"}`)),
		robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			return robbytest.Text("Skill: " + req.Messages[len(req.Messages)-1].Content)
		}),
	)
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"run", "-base-url", srv.URL, "-model", "m", "-system", "Be brief.", "-skills", dir, "clean a.csv"},
		nil, &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	assert.Contains(t, stderr.String(), "robby: skill skipped: broken/SKILL.md: no front matter")
	assert.Contains(t, stdout.String(), "Use commas.")
	first := srv.Requests()[0]
	assert.Contains(t, first.Messages[0].Content, "Be brief.\n\nYou have skills")
	assert.Contains(t, first.Messages[0].Content, "- csv: Clean CSV files.")
	assert.ElementsMatch(t, []string{"load_skill", "read_skill_file"}, first.Tools)

	err = run(t.Context(), []string{"run", "-base-url", srv.URL, "-skills", filepath.Join(dir, "missing"), "hi"}, nil, &stdout, &stderr)
	assert.ErrorContains(t, err, "-skills: ")
}
