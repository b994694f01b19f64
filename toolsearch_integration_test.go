package robby

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// benchAll is every server of the test bench, each with its tools deferred
// or not: everything, filesystem (on root) and memory (on a file in a
// temporary folder).
func (b benchServers) benchAll(t *testing.T, deferred bool) []MCPServer {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "notes.txt"), []byte("tool search works"), 0o600))
	servers := []MCPServer{
		b.everythingStdio("everything"),
		MCPCommand("files", b.node, b.filesystem, root),
		MCPCommand("memory", b.node, b.memory).WithEnv("MEMORY_FILE_PATH=" + filepath.Join(t.TempDir(), "memory.jsonl")),
	}
	if deferred {
		for i := range servers {
			servers[i] = servers[i].WithDeferLoading()
		}
	}
	return servers
}

// TestMCPIntegrationToolSearch runs every test-bench server deferred: the
// first request offers search_tools alone; the model searches, then calls
// what it found, in one extra turn.
func TestMCPIntegrationToolSearch(t *testing.T) {
	b := requireBench(t)
	a, srv := newBenchAgent(t, b.benchAll(t, true)...)
	var deferred int
	for _, tool := range a.Tools() {
		if tool.IsDeferred() {
			deferred++
		}
	}
	require.Greater(t, deferred, 30, "every server's tools are deferred")

	srv.Reply(
		robbytest.ToolCalls(robbytest.Call(SearchToolsName, `{"query":"sum of two numbers"}`)),
		robbytest.ToolCalls(robbytest.Call("everything__get-sum", `{"a":19,"b":23}`)),
		robbytest.Text("42"),
	)
	res, err := a.Run(benchContext(t), "What is 19 + 23?")
	require.NoError(t, err)
	assert.Equal(t, "42", res.Text)
	assert.Equal(t, 3, res.Turns)

	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, []string{SearchToolsName}, reqs[0].Tools, "deferred tools absent until found")
	assert.Equal(t, SearchToolsName, reqs[1].Tools[0])
	assert.Contains(t, reqs[1].Tools, "everything__get-sum")
	assert.LessOrEqual(t, len(reqs[1].Tools), 1+searchResults)
	assert.Equal(t, reqs[1].Tools, reqs[2].Tools)
	var out searchOut
	require.NoError(t, json.Unmarshal([]byte(toolMessagesOf(reqs[1])[0]), &out))
	assert.Equal(t, "everything__get-sum", out.Found[0].Name, "ranked first")
	require.Len(t, res.ToolCalls, 2)
	require.NoError(t, res.ToolCalls[1].Err)
	assert.Contains(t, res.ToolCalls[1].Output, "42")

	// The other servers' tools are found the same way.
	for query, want := range map[string]string{
		"read the contents of a text file":           "files__read_text_file",
		"create entities in the knowledge graph":     "memory__create_entities",
		"list the files and directories of a folder": "files__list_directory",
	} {
		srv.Reply(robbytest.ToolCalls(robbytest.Call(SearchToolsName, fmt.Sprintf(`{"query":%q}`, query))), robbytest.Text("ok"))
		res, err := a.Run(benchContext(t), query)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal([]byte(res.ToolCalls[0].Output), &out))
		names := make([]string, len(out.Found))
		for i, f := range out.Found {
			names[i] = f.Name
		}
		assert.Contains(t, names[:min(2, len(names))], want, "%q found %v", query, names)
		last := srv.Requests()[len(srv.Requests())-1]
		assert.True(t, slices.Contains(last.Tools, want), "%s offered after its search", want)
	}
}

// TestMCPIntegrationToolSearchSize measures the first "hello" request with
// every test-bench server, its tools sent whole or deferred: its bytes, and
// its tokens by robby's estimate (internal/tokens, as robbytest counts
// them). docs/BENCHMARKS.md records the figures (go test -v -run this).
func TestMCPIntegrationToolSearchSize(t *testing.T) {
	b := requireBench(t)
	hello := func(servers []MCPServer) robbytest.Request {
		a, srv := newBenchAgent(t, servers...)
		srv.Reply(robbytest.Text("Hello!"))
		_, err := a.Run(benchContext(t), "hello")
		require.NoError(t, err)
		return srv.Requests()[0]
	}
	for i, name := range []string{"everything", "files", "memory", "all three"} {
		pick := func(deferred bool) []MCPServer {
			all := b.benchAll(t, deferred)
			if i < len(all) {
				return all[i : i+1]
			}
			return all
		}
		whole, deferred := hello(pick(false)), hello(pick(true))
		t.Logf("%-10s all tools sent: %2d tools, %5d bytes, %4d tokens; tool search: %d bytes, %d tokens; %.1f %% fewer bytes, %.1f %% fewer tokens",
			name, len(whole.Tools), len(whole.Body), whole.Tokens, len(deferred.Body), deferred.Tokens,
			100-100*float64(len(deferred.Body))/float64(len(whole.Body)), 100-100*float64(deferred.Tokens)/float64(whole.Tokens))
		assert.Equal(t, []string{SearchToolsName}, deferred.Tools)
		assert.Less(t, len(deferred.Body)*5, len(whole.Body), "%s: at least 80 %% fewer bytes", name)
		assert.Less(t, deferred.Tokens*5, whole.Tokens, "%s: at least 80 %% fewer tokens", name)
	}
}
