package robby

import (
	"context"
	"fmt"
)

// An MCPServerStatus says whether one of an agent's MCP servers is up,
// and why not. Its fields hold no secret: Err is redacted as every error
// of the agent is.
type MCPServerStatus struct {
	Name      string
	Transport string // "stdio", "http", "sse", "websocket" or "transport"
	Connected bool   // its session is up
	Tools     int    // the tools the agent offers the model from it
	Restarts  int    // how many times it was started again after it died
	// Err says why the server is not connected: why an optional server
	// was left out when the agent started, or why the session ended.
	Err error
}

// MCPStatus returns the status of each MCP server given to [WithMCP], in
// their order, those left out included: an optional server that could
// not be reached is listed with Connected false and the reason in Err.
// After Close, every server is listed as not connected, with [ErrClosed].
func (a *Agent) MCPStatus() []MCPServerStatus {
	h := a.core.tools.hub
	if h == nil {
		return nil
	}
	tools := map[string]int{}
	for _, t := range a.core.tools.get(context.Background()).byName {
		if t.mcpServer != "" {
			tools[t.mcpServer]++
		}
	}
	out := make([]MCPServerStatus, 0, len(h.all))
	for _, c := range h.all {
		out = append(out, c.status(tools[c.spec.name]))
	}
	return out
}

func (c *mcpConn) status(tools int) MCPServerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := MCPServerStatus{Name: c.spec.name, Transport: c.spec.kind, Err: c.leftOut}
	if c.restarted {
		st.Restarts = 1
	}
	switch {
	case c.leftOut != nil:
	case c.sd.closed:
		st.Err = c.errClosed()
	case c.down:
		st.Err = fmt.Errorf("MCP server %q: its session ended", c.spec.name)
	default:
		st.Connected, st.Tools = true, tools
	}
	return st
}
