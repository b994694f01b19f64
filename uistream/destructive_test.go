package uistream_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/uistream"
)

// A destructive tool's call says so in its tool-input-available part, for
// the page to show; another tool's call has no toolMetadata.
func TestStreamMarksDestructiveCalls(t *testing.T) {
	remove := robby.NewTool("remove", "Removes a file", func(context.Context, struct{ Path string }) (string, error) {
		return "removed", nil
	}).Destructive()
	srv := newServer(t,
		robbytest.ToolCalls(robbytest.Call("remove", `{"Path":"a"}`), robbytest.Call("add", `{"a":1,"b":2}`)),
		robbytest.Text("done"),
	)
	h := httptest.NewServer(uistream.New(newAgent(t, srv, robby.WithTools(addTool, remove)), uistream.Options{}))
	defer h.Close()

	resp := do(t, h.URL+"/api/chat", "POST", "", chatBody("c1", "remove a, add 1 and 2"))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parts, done := readParts(t, resp.Body)
	require.True(t, done, "no [DONE]")
	meta := map[string]any{}
	for _, p := range parts {
		if p.typ() == "tool-input-available" {
			meta[p["toolName"].(string)] = p["toolMetadata"]
		}
	}
	assert.Equal(t, map[string]any{"remove": map[string]any{"destructive": true}, "add": nil}, meta)
}
