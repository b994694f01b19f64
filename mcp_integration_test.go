package robby

// Integration tests against the real MCP reference servers (TypeScript, run
// with node), installed by .ci/install-mcp.sh into .bench at the module
// root. Without them the tests are skipped, except under CI=true, where a
// missing server is a failure: CI must never pass by skipping them.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// benchServers locates node and the reference servers.
type benchServers struct {
	node       string // absolute path of node
	everything string // server-everything's dist/index.js
	filesystem string // server-filesystem's dist/index.js
	memory     string // server-memory's dist/index.js
}

// requireBench returns the reference servers, or skips the test when they
// are not installed (fails it under CI=true).
func requireBench(t *testing.T) benchServers {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...) + "; run .ci/install-mcp.sh"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b := benchServers{node: node}
	for _, s := range []struct {
		dst  *string
		name string
	}{{&b.everything, "server-everything"}, {&b.filesystem, "server-filesystem"}, {&b.memory, "server-memory"}} {
		*s.dst = filepath.Join(root, ".bench", "node_modules", "@modelcontextprotocol", s.name, "dist", "index.js")
		if _, err := os.Stat(*s.dst); err != nil {
			missing("MCP reference server %s is not installed: %v", s.name, err)
		}
	}
	return b
}

// moduleRoot is the nearest directory above the working directory (the
// package's) that holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// everythingTransport is a way to reach server-everything, as "everything".
type everythingTransport struct {
	name   string
	server func(t *testing.T) MCPServer // started for the test
}

// everythingTransports are server-everything over stdio, streamable HTTP
// and SSE.
func (b benchServers) everythingTransports() []everythingTransport {
	return []everythingTransport{
		{"stdio", func(*testing.T) MCPServer { return b.everythingStdio("everything") }},
		{"streamable HTTP", func(t *testing.T) MCPServer {
			port := b.startEverything(t, "streamableHttp")
			return MCPStreamableHTTP("everything", fmt.Sprintf("http://127.0.0.1:%d/mcp", port))
		}},
		{"SSE", func(t *testing.T) MCPServer {
			port := b.startEverything(t, "sse")
			return MCPSSE("everything", fmt.Sprintf("http://127.0.0.1:%d/sse", port))
		}},
	}
}

// everythingStdio is server-everything over stdio.
func (b benchServers) everythingStdio(name string) MCPServer {
	return MCPCommand(name, b.node, b.everything, "stdio")
}

// startEverything runs server-everything over HTTP ("streamableHttp" or
// "sse") on a free port, and returns its port once it accepts
// connections. It is stopped with SIGINT when the test ends.
func (b benchServers) startEverything(t *testing.T, mode string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())

	var out benchBuffer
	cmd := exec.Command(b.node, b.everything, mode)
	// Not the test's environment: the server's get-env tool would show it.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "PORT=" + strconv.Itoa(port)}
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 2 * time.Second
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_, state := procState(cmd.Process.Pid)
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("server-everything %s did not exit on SIGINT (process state %q)", mode, state)
		}
		if t.Failed() {
			t.Logf("server-everything %s output:\n%s", mode, out.String())
		}
	})

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return port
		}
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("server-everything %s exited before listening: %v\n%s", mode, err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything %s not listening on %s after 15 s", mode, addr)
		}
	}
}

// newBenchAgent builds an agent on a scripted model with MCP servers, and
// closes both when the test ends.
func newBenchAgent(t *testing.T, servers ...MCPServer) (*Agent, *robbytest.Server) {
	t.Helper()
	srv := robbytest.NewServer()
	t.Cleanup(srv.Close)
	a, err := New(WithBaseURL(srv.URL), WithModel("m"), WithMCP(servers...))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, a.Close()) })
	return a, srv
}

// benchTool returns the agent's tool with that name.
func benchTool(t *testing.T, a *Agent, name string) Tool {
	t.Helper()
	tools := a.Tools()
	i := slices.IndexFunc(tools, func(t Tool) bool { return t.Name() == name })
	if i < 0 {
		names := make([]string, len(tools))
		for j, t := range tools {
			names[j] = t.Name()
		}
		t.Fatalf("no tool %q among %v", name, names)
	}
	return tools[i]
}

// toolMessagesOf returns the contents of the tool messages of a request the
// model received.
func toolMessagesOf(req robbytest.Request) []string {
	var out []string
	for _, m := range req.Messages {
		if m.Role == "tool" {
			out = append(out, m.Content)
		}
	}
	return out
}

func benchContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestMCPIntegrationEverything(t *testing.T) {
	b := requireBench(t)
	for _, tr := range b.everythingTransports() {
		t.Run(tr.name, func(t *testing.T) {
			a, srv := newBenchAgent(t, tr.server(t))

			// The tools are listed with their schemas whole, as the
			// server wrote them.
			require.NotEmpty(t, a.Tools())
			echo := benchTool(t, a, "echo").Parameters()
			assert.Equal(t, "http://json-schema.org/draft-07/schema#", echo["$schema"])
			assert.Equal(t, []any{"message"}, echo["required"])
			assert.Equal(t, map[string]any{"message": map[string]any{"type": "string", "description": "Message to echo"}}, echo["properties"])
			sum := benchTool(t, a, "get-sum")
			assert.Equal(t, "Returns the sum of two numbers", sum.Description())
			assert.ElementsMatch(t, []any{"a", "b"}, sum.Parameters()["required"])
			assert.Equal(t, "First number", sum.Parameters()["properties"].(map[string]any)["a"].(map[string]any)["description"])

			srv.Reply(
				robbytest.ToolCalls(
					robbytest.Call("echo", `{"message":"hello from robby"}`),
					robbytest.Call("get-sum", `{"a":19,"b":23}`),
				),
				robbytest.Text("19 + 23 = 42"),
			)
			res, err := a.Run(benchContext(t), "echo something, then add 19 and 23")
			require.NoError(t, err)
			assert.Equal(t, "19 + 23 = 42", res.Text)

			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			assert.Subset(t, reqs[0].Tools, []string{"echo", "get-sum"})
			results := toolMessagesOf(reqs[1])
			require.Len(t, results, 2)
			assert.Equal(t, "Echo: hello from robby", results[0])
			assert.Contains(t, results[1], "42")
			assert.Contains(t, results[1], "19")
		})
	}
}

func TestMCPIntegrationFilesystem(t *testing.T) {
	b := requireBench(t)
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "notes.txt"), []byte("the password is swordfish\n"), 0o600))
	outside := filepath.Join(t.TempDir(), "escaped.txt")

	a, srv := newBenchAgent(t, MCPCommand("files", b.node, b.filesystem, root))

	read := "read_text_file"
	if !slices.ContainsFunc(a.Tools(), func(t Tool) bool { return t.Name() == read }) {
		read = "read_file"
	}
	benchTool(t, a, read)
	benchTool(t, a, "write_file")

	args := func(v map[string]string) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return string(b)
	}
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call(read, args(map[string]string{"path": filepath.Join(root, "notes.txt")}))),
		robbytest.ToolCalls(robbytest.Call("write_file", args(map[string]string{"path": outside, "content": "pwned"}))),
		robbytest.ToolCalls(robbytest.Call("list_allowed_directories", `{}`)),
		robbytest.Text("done"),
	)
	res, err := a.Run(benchContext(t), "what is the password?")
	require.NoError(t, err)
	assert.Equal(t, "done", res.Text)

	reqs := srv.Requests()
	require.Len(t, reqs, 4)
	// The file's content reached the model, as the structured content the
	// server returns.
	assert.JSONEq(t, `{"content":"the password is swordfish\n"}`, toolMessagesOf(reqs[1])[0])
	// Writing outside the root is a tool error the model reads, and
	// nothing was written.
	written := toolMessagesOf(reqs[2])
	require.Len(t, written, 2)
	assert.True(t, strings.HasPrefix(written[1], "Error: "), written[1])
	assert.Contains(t, written[1], "outside allowed directories")
	assert.NoFileExists(t, outside)
	require.Len(t, res.ToolCalls, 3)
	assert.Error(t, res.ToolCalls[1].Err)

	// robby advertises no roots: the server keeps the directory it was
	// given instead of replacing it with the client's roots.
	realRoot, err := filepath.EvalSymlinks(root)
	require.NoError(t, err)
	dirs := toolMessagesOf(reqs[3])[2]
	assert.Contains(t, dirs, realRoot)
}

// TestMCPIntegrationElicitation answers server-everything's
// elicitation/create request. The server sends it only to a client that
// advertises elicitation. Robby then lists the tool it adds, and the
// answer, completed with the form's defaults, reaches the model.
func TestMCPIntegrationElicitation(t *testing.T) {
	b := requireBench(t)
	var asked []string
	var mu sync.Mutex
	server := b.everythingStdio("everything").WithElicitation(func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace", "check": true}}, nil
	})
	a, srv := newBenchAgent(t, server)

	// The server adds the tool once initialized, and says so with
	// notifications/tools/list_changed.
	const tool = "trigger-elicitation-request"
	deadline := time.Now().Add(10 * time.Second)
	for !slices.ContainsFunc(a.Tools(), func(t Tool) bool { return t.Name() == tool }) {
		require.True(t, time.Now().Before(deadline), "no %s tool after 10 s", tool)
		time.Sleep(20 * time.Millisecond)
	}

	srv.Reply(robbytest.ToolCalls(robbytest.Call(tool, `{}`)), robbytest.Text("done"))
	res, err := a.Run(benchContext(t), "ask me")
	require.NoError(t, err)
	require.Len(t, res.ToolCalls, 1)
	require.NoError(t, res.ToolCalls[0].Err)
	mu.Lock()
	assert.Equal(t, []string{"Please provide inputs for the following fields:"}, asked)
	mu.Unlock()
	out := toolMessagesOf(srv.Requests()[1])[0]
	assert.Contains(t, out, "Name: Ada Lovelace")
	assert.Contains(t, out, `"firstLine": "It was a dark and stormy night."`, "a default was filled in")
	assert.Contains(t, out, `"integer": 42`, "a default was filled in")
}

// TestMCPIntegrationNoRootsAdvertised checks on the wire that robby's
// initialize request carries no roots capability, which would make
// server-filesystem replace its directories with the client's roots.
func TestMCPIntegrationNoRootsAdvertised(t *testing.T) {
	b := requireBench(t)
	root := t.TempDir()
	var wire benchBuffer
	cmd := exec.Command(b.node, b.filesystem, root)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	logged := &mcp.LoggingTransport{Transport: &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, Writer: &wire}
	a, _ := newBenchAgent(t, MCPTransport("files", logged))
	benchTool(t, a, "list_allowed_directories")

	var initialize map[string]any
	for line := range strings.Lines(wire.String()) {
		_, msg, ok := strings.Cut(line, "write: ")
		if ok && strings.Contains(msg, `"method":"initialize"`) {
			require.NoError(t, json.Unmarshal([]byte(msg), &initialize))
		}
	}
	require.NotNil(t, initialize, "no initialize request in:\n%s", wire.String())
	caps := initialize["params"].(map[string]any)["capabilities"].(map[string]any)
	assert.NotContains(t, caps, "roots")
	assert.NotContains(t, caps, "sampling")
	assert.NotContains(t, caps, "elicitation")
	assert.NotContains(t, wire.String(), "roots/list")
}

func TestMCPIntegrationSeveralServers(t *testing.T) {
	b := requireBench(t)
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha"), 0o600))
	a, srv := newBenchAgent(t, b.everythingStdio("everything"), MCPCommand("files", b.node, b.filesystem, root))

	// With several servers, every tool is named server__tool.
	for _, tool := range a.Tools() {
		assert.True(t, strings.HasPrefix(tool.Name(), "everything__") || strings.HasPrefix(tool.Name(), "files__"), tool.Name())
	}
	benchTool(t, a, "everything__echo")
	benchTool(t, a, "everything__get-sum")
	benchTool(t, a, "files__list_directory")

	srv.Reply(
		robbytest.ToolCalls(
			robbytest.Call("everything__echo", `{"message":"two servers"}`),
			robbytest.Call("files__list_directory", fmt.Sprintf(`{"path":%q}`, root)),
			robbytest.Call("everything__get-sum", `{"a":1.5,"b":2}`),
		),
		robbytest.Text("done"),
	)
	res, err := a.Run(benchContext(t), "use both servers")
	require.NoError(t, err)
	require.Len(t, res.ToolCalls, 3)
	for _, c := range res.ToolCalls {
		require.NoError(t, c.Err, c.Call.Name)
	}
	results := toolMessagesOf(srv.Requests()[1])
	require.Len(t, results, 3)
	assert.Equal(t, "Echo: two servers", results[0])
	assert.Contains(t, results[1], "[FILE] a.txt")
	assert.Contains(t, results[2], "3.5")

	// A name of one server does not reach the other.
	out, err := a.ExecuteToolCalls(benchContext(t), []ToolCall{{ID: "x", Name: "files__echo", Arguments: `{"message":"x"}`}})
	require.NoError(t, err)
	assert.ErrorIs(t, out[0].Err, ErrUnknownTool)
}

// TestMCPIntegrationServerKilledMidCall kills the server while a call runs.
// The model reads an error for that call, and the next call works on the
// server robby restarted. A server that dies again is not restarted twice.
func TestMCPIntegrationServerKilledMidCall(t *testing.T) {
	b := requireBench(t)
	// The shell writes its PID, then becomes node: the PID is the server's,
	// and each start writes the new one.
	pidFile := filepath.Join(t.TempDir(), "pid")
	server := MCPCommand("everything", "/bin/sh", "-c", `echo $$ > "$0" && exec "$1" "$2" stdio`, pidFile, b.node, b.everything).
		WithGracePeriod(500 * time.Millisecond)
	a, srv := newBenchAgent(t, server)
	first := readPID(t, pidFile)

	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("trigger-long-running-operation", `{"duration":20,"steps":20}`)),
		robbytest.ToolCalls(robbytest.Call("echo", `{"message":"back again"}`)),
		robbytest.ToolCalls(robbytest.Call("echo", `{"message":"once more"}`)),
		robbytest.Text("done"),
	)
	var (
		killed   []int
		results  []*ToolResult
		progress int
	)
	for ev, err := range a.Stream(benchContext(t), "run the long operation") {
		require.NoError(t, err)
		switch {
		case ev.Kind == EventProgress && len(killed) == 0:
			// The call is running on the server: kill it.
			progress++
			killed = append(killed, first)
			killAndWait(t, first)
		case ev.Kind == EventToolResult:
			results = append(results, ev.ToolResult)
			if ev.Turn == 2 {
				// The restarted server dies between calls.
				second := readPID(t, pidFile)
				require.NotEqual(t, first, second, "the server was not restarted")
				killed = append(killed, second)
				killAndWait(t, second)
			}
		}
	}
	require.Equal(t, 1, progress, "the long operation reported no progress")
	require.Len(t, results, 3)

	// The killed call failed at once, not when the operation would have
	// ended.
	require.Error(t, results[0].Err)
	assert.Less(t, results[0].Duration, 10*time.Second)
	assert.True(t, strings.HasPrefix(results[0].Output, "Error: "), results[0].Output)
	assert.Contains(t, results[0].Output, `"everything"`)
	// The next call ran on a new process.
	require.NoError(t, results[1].Err)
	assert.Equal(t, "Echo: back again", results[1].Output)
	// The server is restarted once only.
	require.Error(t, results[2].Err)

	reqs := srv.Requests()
	require.Len(t, reqs, 4)
	assert.Equal(t, results[0].Output, toolMessagesOf(reqs[1])[0])
	assert.Equal(t, []string{results[0].Output, "Echo: back again", results[2].Output}, toolMessagesOf(reqs[3]))

	// Both killed processes were reaped.
	for _, pid := range killed {
		_, state := procState(pid)
		assert.NotEqual(t, "Z", state, "process %d is a zombie", pid)
	}
}

func readPID(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

// killAndWait kills a process and waits until it has died, so that its
// pipes are closed.
func killAndWait(t *testing.T, pid int) {
	t.Helper()
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if ok, state := procState(pid); !ok || state == "Z" {
			return
		}
	}
	t.Fatalf("process %d still alive after SIGKILL", pid)
}

func TestMCPIntegrationServerNeverInitializes(t *testing.T) {
	b := requireBench(t)
	silent := MCPCommand("silent", b.node, "-e", "setInterval(() => {}, 1000)").
		WithConnectTimeout(500 * time.Millisecond).
		WithGracePeriod(200 * time.Millisecond)
	before := childProcesses(t)

	// The connect timeout bounds the wait, and the error names the server.
	start := time.Now()
	_, err := New(WithModel("m"), WithMCP(silent))
	require.Error(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Contains(t, err.Error(), `MCP server "silent"`)

	// A server that did come up is closed when New fails.
	_, err = New(WithModel("m"), WithMCP(silent, b.everythingStdio("everything")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `MCP server "silent"`)
	assert.NotContains(t, err.Error(), `"everything"`)
	assertNoNewChildren(t, before)

	// An optional server is left out.
	a, err := New(WithModel("m"), WithMCP(silent.WithOptional(), b.everythingStdio("everything")))
	require.NoError(t, err)
	// Names do not depend on which servers came up.
	benchTool(t, a, "everything__echo")
	for _, tool := range a.Tools() {
		assert.False(t, strings.HasPrefix(tool.Name(), "silent__"), tool.Name())
	}
	require.NoError(t, a.Close())

	// Neither the silent server nor the others were left running.
	assertNoNewChildren(t, before)
}

func TestMCPIntegrationCloseLeavesNoProcesses(t *testing.T) {
	b := requireBench(t)
	before := childProcesses(t)
	root := t.TempDir()
	a, err := New(WithModel("m"), WithMCP(
		b.everythingStdio("one"),
		b.everythingStdio("two"),
		MCPCommand("files", b.node, b.filesystem, root),
	))
	require.NoError(t, err)

	during := childProcesses(t)
	var started []int
	for pid := range during {
		if _, ok := before[pid]; !ok {
			started = append(started, pid)
		}
	}
	assert.Len(t, started, 3, "one process per server")

	start := time.Now()
	require.NoError(t, a.Close())
	t.Logf("Close took %v", time.Since(start))
	assertNoNewChildren(t, before)
	for _, pid := range started {
		ok, _ := procState(pid)
		assert.False(t, ok, "process %d still exists", pid)
	}
}

// childProcesses returns the test process's children, by PID, with their
// state (R, S, Z...).
func childProcesses(t *testing.T) map[int]string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		t.Skip("no /proc to list child processes")
	}
	children := map[int]string{}
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // it ended meanwhile
		}
		pid, state, ppid, ok := parseStat(string(b))
		if ok && ppid == os.Getpid() {
			children[pid] = state
		}
	}
	return children
}

// procState reports whether a process exists, and its state.
func procState(pid int) (bool, string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false, ""
	}
	_, state, _, ok := parseStat(string(b))
	return ok, state
}

// parseStat reads /proc/PID/stat: "pid (comm) state ppid ...", where comm
// may hold spaces and parentheses.
func parseStat(s string) (pid int, state string, ppid int, ok bool) {
	i, j := strings.IndexByte(s, ' '), strings.LastIndexByte(s, ')')
	if i < 0 || j < 0 {
		return 0, "", 0, false
	}
	f := strings.Fields(s[j+1:])
	if len(f) < 2 {
		return 0, "", 0, false
	}
	pid, err1 := strconv.Atoi(s[:i])
	ppid, err2 := strconv.Atoi(f[1])
	return pid, f[0], ppid, err1 == nil && err2 == nil
}

// assertNoNewChildren checks that the test process has no child but those
// it had before: none left running, none left a zombie.
func assertNoNewChildren(t *testing.T, before map[int]string) {
	t.Helper()
	for pid, state := range childProcesses(t) {
		if _, ok := before[pid]; !ok {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			t.Errorf("child process %d (state %s) left: %s", pid, state, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
}

// benchBuffer is a bytes.Buffer safe for concurrent use.
type benchBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *benchBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *benchBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
