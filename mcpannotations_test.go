package robby

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// server-filesystem annotates its tools: read_text_file is read-only,
// write_file idempotent and destructive, edit_file destructive only,
// create_directory idempotent and not destructive. The program's
// annotations of a tool replace the server's.
func TestMCPAnnotationsFilesystem(t *testing.T) {
	b := requireBench(t)
	root := t.TempDir()
	var mu sync.Mutex
	approved := map[string]bool{} // tool → destructive, as the approval saw it
	approve := func(ctx context.Context, call ToolCall) error {
		tool, ok := ToolFromContext(ctx)
		assert.True(t, ok)
		assert.Equal(t, call.Name, tool.Name())
		mu.Lock()
		defer mu.Unlock()
		approved[call.Name] = tool.IsDestructive()
		return nil
	}
	srv := robbytest.NewServer()
	t.Cleanup(srv.Close)
	files := MCPCommand("files", b.node, b.filesystem, root).
		WithToolAnnotations("move_file", mcp.ToolAnnotations{IdempotentHint: true})
	a, err := New(WithBaseURL(srv.URL), WithModel("m"), WithMCP(files), WithApproval(approve))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, a.Close()) })

	for _, w := range []struct {
		tool                    string
		idempotent, destructive bool
	}{
		{"read_text_file", true, false},
		{"write_file", true, true},
		{"edit_file", false, true},
		{"create_directory", true, false},
		{"move_file", true, false}, // the server says destructive, not idempotent: the program wins
	} {
		tool := benchTool(t, a, w.tool)
		assert.Equal(t, w.idempotent, tool.IsIdempotent(), w.tool)
		assert.Equal(t, w.destructive, tool.IsDestructive(), w.tool)
	}

	path := filepath.Join(root, "a.txt")
	args, err := json.Marshal(map[string]string{"path": path, "content": "hello"})
	require.NoError(t, err)
	readArgs, err := json.Marshal(map[string]string{"path": path})
	require.NoError(t, err)
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("write_file", string(args))),
		robbytest.ToolCalls(robbytest.Call("read_text_file", string(readArgs))),
		robbytest.Text("done"),
	)
	shown := map[string]bool{} // tool → destructive, as the stream said
	for e, err := range a.Stream(benchContext(t), "write hello, then read it") {
		require.NoError(t, err)
		if e.Kind == EventToolCall {
			shown[e.ToolCall.Name] = e.Destructive
		}
	}
	want := map[string]bool{"write_file": true, "read_text_file": false}
	assert.Equal(t, want, shown)
	assert.Equal(t, want, approved)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(got))
}

// hinted reads the hints as MCP defines them, the program's annotations in
// place of the server's.
func TestMCPServerHinted(t *testing.T) {
	yes, no := true, false
	s := MCPCommand("s", "x").WithToolAnnotations("trusted", mcp.ToolAnnotations{ReadOnlyHint: true}).
		WithToolAnnotations("trusted", mcp.ToolAnnotations{DestructiveHint: &yes}) // the last wins
	for _, w := range []struct {
		name                    string
		tool                    *mcp.Tool
		idempotent, destructive bool
	}{
		{"none", &mcp.Tool{Name: "t"}, false, false},
		{"destructive left out", &mcp.Tool{Name: "t", Annotations: &mcp.ToolAnnotations{}}, false, false},
		{"read-only", &mcp.Tool{Name: "t", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &yes}}, true, false},
		{"idempotent", &mcp.Tool{Name: "t", Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: &no}}, true, false},
		{"destructive", &mcp.Tool{Name: "t", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}}, false, true},
		{"overridden", &mcp.Tool{Name: "trusted", Annotations: &mcp.ToolAnnotations{IdempotentHint: true}}, false, true},
	} {
		idempotent, destructive := s.hinted(w.tool)
		assert.Equal(t, w.idempotent, idempotent, w.name)
		assert.Equal(t, w.destructive, destructive, w.name)
	}
	// The server given is unchanged by a later WithToolAnnotations.
	before := MCPCommand("s", "x").WithToolAnnotations("a", mcp.ToolAnnotations{ReadOnlyHint: true})
	_ = before.WithToolAnnotations("a", mcp.ToolAnnotations{})
	idempotent, _ := before.hinted(&mcp.Tool{Name: "a"})
	assert.True(t, idempotent)
}

// ToolFromContext reports false outside a call.
func TestToolFromContextOutsideACall(t *testing.T) {
	_, ok := ToolFromContext(t.Context())
	assert.False(t, ok)
}
