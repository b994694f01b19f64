package robby

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMCPStatus lists the servers up and those left out, with why: an
// optional server that failed to start was visible only to a logger.
func TestMCPStatus(t *testing.T) {
	a := newTestAgent(t, newServer(t),
		WithMCP(MCPTransport("moon", failingTransport{}).WithOptional(), inMemory(t, "ok", newMCPTestServer())))
	status := a.MCPStatus()
	require.Len(t, status, 2)
	moon, ok := status[0], status[1]
	assert.Equal(t, "moon", moon.Name)
	assert.Equal(t, "transport", moon.Transport)
	assert.False(t, moon.Connected)
	assert.ErrorContains(t, moon.Err, "no route to the moon")
	assert.Equal(t, MCPServerStatus{Name: "ok", Transport: "transport", Connected: true, Tools: len(a.Tools())}, ok)
	assert.Positive(t, ok.Tools)

	require.NoError(t, a.Close())
	assert.ErrorIs(t, a.MCPStatus()[1].Err, ErrClosed)
	assert.Nil(t, newTestAgent(t, newServer(t)).MCPStatus(), "no MCP server")
}
