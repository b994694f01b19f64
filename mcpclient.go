package robby

//lint:file-ignore SA1019 MCP logging and roots are deprecated as of protocol 2026-07-28, but servers of older protocols use them, and robby serves both.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robby-go/robby/internal/mcpwire"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpHub holds an agent's sessions with its MCP servers.
type mcpHub struct {
	conns    []*mcpConn // connected at start
	all      []*mcpConn // every server configured, left out or not
	servers  int        // configured, connected or not: names must not depend on which are up
	keep     []string   // WithMCPTools
	portable bool
	local    map[string]*Tool
	log      *slog.Logger
	secrets  secrets
	tel      *telemetry
	changed  atomic.Bool // a server announced a new tool list
	tokens   atomic.Int64
}

// mcpConn is the session with one server, restarted once if it dies.
type mcpConn struct {
	hub    *mcpHub
	spec   MCPServer
	stderr *tailBuffer

	mu        sync.Mutex
	session   *mcp.ClientSession
	tools     []*mcp.Tool
	down      bool  // the session ended
	leftOut   error // why an optional server was left out at start
	restarted bool
	cancel    context.CancelFunc // ends the session's context, after it is closed
	cmd       *exec.Cmd          // a command server's process
	sd        shutdown
	calls     map[string]callTarget // the streamed calls in flight, by progress token

	res resourceState
}

// callTarget is the stream a call's notices go to.
type callTarget struct {
	sink    *eventSink
	tool    string
	dropped *atomic.Int64 // notices the stream had no room for
}

// connectMCP connects to every server in parallel. It fails if a server
// that is not optional cannot be reached, naming each.
func connectMCP(cfg *config, local map[string]*Tool) (*mcpHub, error) {
	h := &mcpHub{secrets: cfg.secrets, servers: len(cfg.mcp), keep: cfg.mcpTools, portable: cfg.portable, local: local,
		log: cfg.logger, tel: cfg.telemetry}
	conns := make([]*mcpConn, len(cfg.mcp))
	errs := make([]error, len(cfg.mcp))
	var wg sync.WaitGroup
	for i, s := range cfg.mcp {
		s.traced = h.tel.traced()
		c := &mcpConn{hub: h, spec: s, stderr: new(tailBuffer), calls: map[string]callTarget{}}
		c.sd.init()
		conns[i] = c
		wg.Go(func() { errs[i] = c.start(context.Background()) })
	}
	wg.Wait()
	h.all = conns
	var failed []error
	for i, c := range conns {
		switch {
		case errs[i] == nil:
			h.conns = append(h.conns, c)
		case c.spec.optional:
			c.leftOut = errs[i]
			h.log.Warn("robby: optional MCP server left out", slog.String("server", c.spec.name), slog.Any("error", errs[i]))
		default:
			failed = append(failed, errs[i])
		}
	}
	if len(failed) > 0 {
		h.close()
		return nil, errors.Join(failed...)
	}
	return h, nil
}

// start connects to the server and lists its tools. Some transports (SSE)
// hold the connect context for the session's life. So the timeout and
// Close cancel it only while connecting.
func (c *mcpConn) start(ctx context.Context) (err error) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	timer := time.AfterFunc(c.spec.timeout, cancel)
	stopClose := context.AfterFunc(c.sd.starting, cancel)
	defer func() {
		if !stopClose() && err != nil {
			err = c.errClosed()
		}
		if !timer.Stop() && err != nil {
			err = fmt.Errorf("%w (timed out after %v)", err, c.spec.timeout)
		}
		if err != nil {
			cancel()
		}
	}()
	t, err := c.spec.transport(c.stderr)
	if err != nil {
		return c.fail("connecting", err)
	}
	c.spec.t = nil // a caller's transport connects once
	var cmd *exec.Cmd
	if ct, ok := t.(*mcp.CommandTransport); ok {
		cmd = ct.Command
	}
	t = mcpwire.ReadNotices(t, c)
	client := mcp.NewClient(&mcp.Implementation{Name: "robby", Version: "v0"}, c.clientOptions())
	for _, uri := range c.spec.roots {
		client.AddRoots(&mcp.Root{URI: uri})
	}
	session, err := client.Connect(ctx, t, nil)
	if err != nil {
		return c.fail("connecting", err)
	}
	var tools []*mcp.Tool
	for tool, err := range session.Tools(ctx, nil) {
		if err != nil {
			session.Close()
			return c.fail("listing tools", err)
		}
		tools = append(tools, tool)
	}
	c.askForLogs(ctx, session)
	c.listResources(ctx, session)
	c.mu.Lock()
	closed := c.sd.closed
	if !closed {
		c.session, c.tools, c.down, c.cancel, c.cmd = session, tools, false, cancel, cmd
	}
	c.mu.Unlock()
	if closed { // Close began while connecting, and does not see this session
		session.Close()
		return c.errClosed()
	}
	go c.watch(session)
	return nil
}

// watch marks the connection down when its session ends.
func (c *mcpConn) watch(s *mcp.ClientSession) {
	s.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session == s {
		c.down = true
	}
}

func (c *mcpConn) clientOptions() *mcp.ClientOptions {
	caps := &mcp.ClientCapabilities{}
	if len(c.spec.roots) > 0 {
		caps.RootsV2 = &mcp.RootCapabilities{}
	}
	return &mcp.ClientOptions{
		Capabilities: caps,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.hub.changed.Store(true)
		},
		ResourceListChangedHandler: c.onResourcesChanged,
		ResourceUpdatedHandler:     c.onResourceUpdated,
		// robby handles notices where it reads them (internal/mcpwire). The
		// go-sdk's handlers see only those in events too large to read.
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			c.onLog(ctx, req.Params, "")
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			c.logProgress(ctx, req.Params)
		},
		ElicitationHandler: c.spec.elicit, // nil advertises no elicitation
	}
}

// logLevel is the least severe level of the server log messages robby asks
// for.
const logLevel = "info"

// askForLogs asks a server for its log messages. A server of a protocol
// before 2026-07-28 sends none until the client sets a level.
func (c *mcpConn) askForLogs(ctx context.Context, s *mcp.ClientSession) {
	init := s.InitializeResult()
	if init == nil || init.Capabilities == nil || init.Capabilities.Logging == nil || init.ProtocolVersion >= "2026-07-28" {
		return
	}
	if err := s.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: logLevel}); err != nil {
		c.hub.log.DebugContext(ctx, "robby: MCP server refused a log level", slog.String("server", c.spec.name), slog.Any("error", err))
	}
}

// fail names the server in err and adds the last lines its process wrote
// to stderr. They usually say why it failed.
func (c *mcpConn) fail(doing string, err error) error {
	err = fmt.Errorf("MCP server %q: %s: %w", c.spec.name, doing, err)
	if tail := c.stderr.String(); tail != "" {
		err = fmt.Errorf("%w\nlast lines of its stderr:\n%s", err, tail)
	}
	return c.hub.secrets.wrap(err)
}

// live returns the session. If it died, it is started again once, unless
// Close began.
func (c *mcpConn) live(ctx context.Context) (*mcp.ClientSession, error) {
	c.mu.Lock()
	if c.sd.closed {
		c.mu.Unlock()
		return nil, c.errClosed()
	}
	s, down, restarted, cancel := c.session, c.down, c.restarted, c.cancel
	if down && !restarted {
		c.restarted = true
		c.sd.busy.Add(1) // Close waits for the restart
		defer c.sd.busy.Done()
	}
	c.mu.Unlock()
	if !down {
		return s, nil
	}
	if restarted {
		return nil, fmt.Errorf("robby: MCP server %q is down and was restarted once already", c.spec.name)
	}
	s.Close()
	cancel()
	c.hub.log.WarnContext(ctx, "robby: restarting MCP server", slog.String("server", c.spec.name))
	if err := c.start(ctx); err != nil {
		return nil, err
	}
	c.hub.changed.Store(true) // its tools may differ
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session, nil
}

func (c *mcpConn) listen(sink *eventSink, token, tool string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[token] = callTarget{sink, tool, new(atomic.Int64)}
}

// unlisten ends the call's notices. It logs how many its stream had no
// room for, if any.
func (c *mcpConn) unlisten(ctx context.Context, token string) {
	c.mu.Lock()
	t := c.calls[token]
	delete(c.calls, token)
	c.mu.Unlock()
	if n := t.dropped.Load(); n > 0 {
		c.hub.log.WarnContext(ctx, "robby: MCP notices dropped: the stream's reader fell behind", slog.String("server", c.spec.name),
			slog.String("tool", t.tool), slog.Int64("dropped", n))
	}
}

// target returns the stream of the call in flight whose progress token is
// token.
func (c *mcpConn) target(token string) (callTarget, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.calls[token]
	return t, ok
}

// Notice handles req if it is a progress notice or a log message, and
// reports whether it was. Progress goes to the stream of the call whose
// token it names. A log message goes to the stream of the call whose
// progress token is call, if call is not "". Then req was read on that
// call's own response stream (internal/mcpwire). Both go to the logger.
// A notice robby cannot read is left to the go-sdk, which reports it.
func (c *mcpConn) Notice(ctx context.Context, req *jsonrpc.Request, call string) bool {
	if req.IsCall() {
		return false
	}
	switch req.Method {
	case "notifications/progress":
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(req.Params, &p) != nil {
			return false
		}
		c.logProgress(ctx, &p)
		token, _ := p.ProgressToken.(string)
		c.send(ctx, token, token == call, Notice{Server: c.spec.name, Message: p.Message, Progress: p.Progress, Total: p.Total})
	case "notifications/message":
		var p mcp.LoggingMessageParams
		if json.Unmarshal(req.Params, &p) != nil || p.Level == "" {
			return false
		}
		c.onLog(ctx, &p, call)
	default:
		return false
	}
	return true
}

func (c *mcpConn) logProgress(ctx context.Context, p *mcp.ProgressNotificationParams) {
	c.hub.log.DebugContext(ctx, "robby: MCP progress", slog.String("server", c.spec.name),
		slog.Float64("progress", p.Progress), slog.Float64("total", p.Total), slog.String("message", p.Message))
}

// onLog logs a server's log message. If call is not "", it also sends it
// to the stream of the call with that progress token. The message was read
// on that call's own response stream.
func (c *mcpConn) onLog(ctx context.Context, p *mcp.LoggingMessageParams, call string) {
	msg, ok := p.Data.(string)
	if !ok {
		b, _ := json.Marshal(p.Data)
		msg = string(b)
	}
	c.hub.log.InfoContext(ctx, "robby: MCP server log", slog.String("server", c.spec.name),
		slog.String("level", string(p.Level)), slog.String("logger", p.Logger), slog.String("message", msg))
	c.send(ctx, call, true, Notice{Server: c.spec.name, Level: string(p.Level), Message: msg})
}

// send sends n to the stream of the call in flight with progress token
// token, if there is one. If n was read on that call's own response
// stream (own), it waits for room until ctx, the call's, ends. Otherwise,
// with no room, n is dropped and counted.
func (c *mcpConn) send(ctx context.Context, token string, own bool, n Notice) {
	if token == "" {
		return
	}
	target, ok := c.target(token)
	if !ok {
		return
	}
	n.Tool = target.tool
	if own && target.sink.forward(ctx, n.event()) || !own && target.sink.send(n) {
		return
	}
	target.dropped.Add(1)
}

// close ends every session at once, each within its server's grace
// period (see mcpclose.go).
func (h *mcpHub) close() error {
	errs := make([]error, len(h.conns))
	var wg sync.WaitGroup
	for i, c := range h.conns {
		wg.Go(func() { errs[i] = c.close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// An MCPServerStatus says whether one of an agent's MCP servers is up,
// and why not. Its fields hold no secret: Err is redacted, as every error
// of the agent is.
type MCPServerStatus struct {
	Name      string
	Transport string // "stdio", "http", "sse", "websocket" or "transport"
	Connected bool   // its session is up
	Tools     int    // the tools the agent offers the model from it
	Restarts  int    // how many times it was started again after it died
	// Err says why the server is not connected. Either an optional server
	// was left out when the agent started, or the session ended.
	Err error
}

// MCPStatus returns the status of each MCP server given to [WithMCP], in
// their order, those left out included. An optional server that could not
// be reached is listed with Connected false and the reason in Err. After
// Close, every server is listed as not connected, with [ErrClosed].
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
		st.Err = fmt.Errorf("robby: MCP server %q: its session ended", c.spec.name)
	default:
		st.Connected, st.Tools = true, tools
	}
	return st
}
