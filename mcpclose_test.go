package robby

import (
	"context"
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// stubbornServer is the test binary as a command server that ignores the
// end of its input and SIGTERM.
func stubbornServer(name string) MCPServer {
	return MCPCommand(name, selfServer(name).command).WithEnv("ROBBY_TEST_MCP_SERVER=stubborn")
}

// TestCloseEndsMCPCallsInFlight closes an agent while a tool call hangs,
// with no tool timeout. The server outlives its input and ignores SIGTERM.
// Close returns within the grace period and a little, the call ends with
// ErrClosed, and no process is left. Close waited for the call for as
// long as it took, then 2 s and 2 s more for the process.
func TestCloseEndsMCPCallsInFlight(t *testing.T) {
	before := childProcesses(t)
	a := newTestAgent(t, newServer(t), WithMCP(stubbornServer("stub")), WithToolTimeout(0))
	pid := faultNewChild(t, before)
	read := faultReadBytes(pid)
	results := make(chan []ToolResult, 1)
	go func() {
		res, _ := a.ExecuteToolCalls(context.Background(), []ToolCall{{ID: "1", Name: "hang", Arguments: "{}"}})
		results <- res
	}()
	require.Eventually(t, func() bool { return faultReadBytes(pid) != read }, 5*time.Second, time.Millisecond,
		"the server reads the call")

	start := time.Now()
	require.NoError(t, a.Close())
	took := time.Since(start)
	t.Logf("Close returned after %v with a call in flight (grace period %v)", took, DefaultMCPGracePeriod)
	assert.GreaterOrEqual(t, took, DefaultMCPGracePeriod, "the call had the grace period to finish")
	assert.Less(t, took, DefaultMCPGracePeriod+terminateWait+time.Second)
	res := <-results
	require.Len(t, res, 1)
	assert.ErrorIs(t, res[0].Err, ErrClosed)
	alive, state := procState(pid)
	assert.False(t, alive && state != "Z", "the server's process is gone (state %q)", state)
	assertNoNewChildren(t, before)
}

// TestCloseWithoutCallsIsPrompt closes a stubborn server with nothing in
// flight: it is terminated at the end of its grace period, and killed
// soon after. It took two grace periods (2 s each) and more.
func TestCloseWithoutCallsIsPrompt(t *testing.T) {
	before := childProcesses(t)
	a := newTestAgent(t, newServer(t), WithMCP(stubbornServer("stub")))
	faultNewChild(t, before)
	start := time.Now()
	require.NoError(t, a.Close())
	took := time.Since(start)
	t.Logf("Close returned after %v (grace period %v)", took, DefaultMCPGracePeriod)
	assert.Less(t, took, DefaultMCPGracePeriod+terminateWait+time.Second)
	assertNoNewChildren(t, before)
}

// TestNoMCPRestartAfterClose: a server that died is not started again by
// a call made after Close, nor by a run that goes on after it. A call
// restarted the server, whose process then outlived the agent.
func TestNoMCPRestartAfterClose(t *testing.T) {
	t.Run("call", func(t *testing.T) {
		before := childProcesses(t)
		a := newTestAgent(t, newServer(t), WithMCP(selfServer("self")))
		c := a.core.tools.hub.conns[0]
		killServer(t, c, faultNewChild(t, before))
		require.NoError(t, a.Close())
		_, err := c.call(t.Context(), "add", json.RawMessage(`{"a":1,"b":2}`))
		assert.ErrorIs(t, err, ErrClosed)
		assertNoNewChildren(t, before)
	})
	t.Run("run", func(t *testing.T) {
		before := childProcesses(t)
		srv := newServer(t)
		srv.Reply(robbytest.ToolCalls(robbytest.Call("closer", `{}`)),
			robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)), robbytest.Text("done"))
		var a *Agent
		closer := FuncTool("closer", "", nil, func(context.Context, map[string]any) (any, error) {
			return "closed", a.Close()
		})
		a = newTestAgent(t, srv, WithTools(closer), WithMCP(selfServer("self")))
		killServer(t, a.core.tools.hub.conns[0], faultNewChild(t, before))
		_, err := a.Run(t.Context(), "go")
		assert.ErrorIs(t, err, ErrClosed)
		assert.Equal(t, 1, len(srv.Requests()), "the model is not asked again after Close")
		assertNoNewChildren(t, before)
		checkConsistent(t, a.Messages())
	})
}

// killServer kills a command server's process and waits until its
// connection knows it is down.
func killServer(t *testing.T, c *mcpConn, pid int) {
	t.Helper()
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.down
	}, 5*time.Second, time.Millisecond)
}

// TestCloseDuringMCPRestart closes the agent while a call restarts a dead
// server, at several moments of the restart. There is no data race (run
// with -race). Close read the session's cancel function outside the lock
// the restart wrote it under. The call ends with ErrClosed or its result,
// and no process is left.
func TestCloseDuringMCPRestart(t *testing.T) {
	for _, delay := range []time.Duration{0, time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			before := childProcesses(t)
			a := newTestAgent(t, newServer(t), WithMCP(selfServer("self")))
			c := a.core.tools.hub.conns[0]
			killServer(t, c, faultNewChild(t, before))
			done := make(chan error, 1)
			go func() {
				_, err := c.call(context.Background(), "add", json.RawMessage(`{"a":1,"b":2}`))
				done <- err
			}()
			time.Sleep(delay)
			require.NoError(t, a.Close())
			if err := <-done; err != nil {
				assert.ErrorIs(t, err, ErrClosed)
			}
			assertNoNewChildren(t, before)
		})
	}
}

// TestMCPCallAfterCloseOverHTTP: a remote server's call in flight ends
// with ErrClosed at the end of the grace period, even when the server's
// tool ignores its cancellation.
func TestMCPCallAfterCloseOverHTTP(t *testing.T) {
	server := newMCPTestServer()
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	server.AddTool(&mcp.Tool{Name: "stuck", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(started)
			<-release // ignores its context
			return &mcp.CallToolResult{}, nil
		})
	spec, _ := remoteMCP(t, "http", server)
	a := newTestAgent(t, newServer(t), WithMCP(spec.WithGracePeriod(200*time.Millisecond)), WithToolTimeout(0))
	results := make(chan []ToolResult, 1)
	go func() {
		res, _ := a.ExecuteToolCalls(context.Background(), []ToolCall{{ID: "1", Name: "stuck", Arguments: "{}"}})
		results <- res
	}()
	<-started
	start := time.Now()
	a.Close()
	took := time.Since(start)
	t.Logf("Close returned after %v", took)
	assert.Less(t, took, 2*time.Second)
	res := <-results
	assert.ErrorIs(t, res[0].Err, ErrClosed)
	_, err := a.core.tools.hub.conns[0].call(t.Context(), "add", json.RawMessage(`{"a":1,"b":2}`))
	assert.ErrorIs(t, err, ErrClosed)
}
