package robby

//lint:file-ignore SA1019 MCP logging and roots are deprecated as of protocol 2026-07-28, but servers of older protocols use them, and robby serves both.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3/shared"
)

// mcpHub holds an agent's sessions with its MCP servers.
type mcpHub struct {
	conns    []*mcpConn
	servers  int      // configured, connected or not: names must not depend on which are up
	keep     []string // WithMCPTools
	portable bool
	local    map[string]*Tool
	log      *slog.Logger
	secrets  secrets
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
	down      bool // the session ended
	restarted bool
	cancel    context.CancelFunc  // ends the session's context, after it is closed
	sinks     map[*noticeSink]int // streams running a call on this server
	progress  map[string]progressTarget

	res resourceState
}

type progressTarget struct {
	sink *noticeSink
	tool string
}

// connectMCP connects to every server in parallel. It fails if a server
// that is not optional cannot be reached, naming each.
func connectMCP(cfg *config, local map[string]*Tool) (*mcpHub, error) {
	h := &mcpHub{secrets: secretsOf(cfg), servers: len(cfg.mcp), keep: cfg.mcpTools, portable: cfg.portable, local: local, log: cfg.logger}
	conns := make([]*mcpConn, len(cfg.mcp))
	errs := make([]error, len(cfg.mcp))
	var wg sync.WaitGroup
	for i, s := range cfg.mcp {
		c := &mcpConn{hub: h, spec: s, stderr: new(tailBuffer), sinks: map[*noticeSink]int{}, progress: map[string]progressTarget{}}
		conns[i] = c
		wg.Go(func() { errs[i] = c.start(context.Background()) })
	}
	wg.Wait()
	var failed []error
	for i, c := range conns {
		switch {
		case errs[i] == nil:
			h.conns = append(h.conns, c)
		case c.spec.optional:
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
// hold the connect context for the session's life, so the timeout cancels
// it only while connecting.
func (c *mcpConn) start(ctx context.Context) (err error) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	timer := time.AfterFunc(c.spec.timeout, cancel)
	defer func() {
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
	c.session, c.tools, c.down, c.cancel = session, tools, false, cancel
	c.mu.Unlock()
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
		ResourceListChangedHandler:  c.onResourcesChanged,
		ResourceUpdatedHandler:      c.onResourceUpdated,
		LoggingMessageHandler:       c.onLog,
		ProgressNotificationHandler: c.onProgress,
		ElicitationHandler:          c.spec.elicit, // nil advertises no elicitation
	}
}

// logLevel is the least severe level of the server log messages robby asks
// for.
const logLevel = "info"

// askForLogs asks a server of a protocol before 2026-07-28, which sends no
// log message until the client sets a level, for its messages.
func (c *mcpConn) askForLogs(ctx context.Context, s *mcp.ClientSession) {
	init := s.InitializeResult()
	if init == nil || init.Capabilities == nil || init.Capabilities.Logging == nil || init.ProtocolVersion >= "2026-07-28" {
		return
	}
	if err := s.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: logLevel}); err != nil {
		c.hub.log.DebugContext(ctx, "robby: MCP server refused a log level", slog.String("server", c.spec.name), slog.Any("error", err))
	}
}

// fail names the server in err, with the last lines its process wrote to
// stderr, which usually say why it failed.
func (c *mcpConn) fail(doing string, err error) error {
	err = fmt.Errorf("MCP server %q: %s: %w", c.spec.name, doing, err)
	if tail := c.stderr.String(); tail != "" {
		err = fmt.Errorf("%w\nlast lines of its stderr:\n%s", err, tail)
	}
	return c.hub.secrets.wrap(err)
}

// refresh lists the tools of every server again, after a server announced
// a change. Each listing is bounded by the server's connect timeout, as
// ctx may have no deadline (Agent.Tools): a server that does not answer
// keeps its previous tools.
func (h *mcpHub) refresh(ctx context.Context) {
	for _, c := range h.conns {
		s, err := c.live(ctx)
		if err != nil {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, c.spec.timeout)
		var tools []*mcp.Tool
		for tool, err := range s.Tools(lctx, nil) {
			if err != nil {
				h.log.WarnContext(ctx, "robby: listing MCP tools", slog.String("server", c.spec.name), slog.Any("error", err))
				tools = nil
				break
			}
			tools = append(tools, tool)
		}
		c.listResources(lctx, s)
		cancel()
		if tools != nil {
			c.mu.Lock()
			c.tools = tools
			c.mu.Unlock()
		}
	}
}

// tools returns the servers' tools as robby tools, named for the model.
func (h *mcpHub) tools() []Tool {
	used := make(map[string]bool, len(h.local))
	for name := range h.local {
		used[name] = true
	}
	var out []Tool
	for _, c := range h.conns {
		c.mu.Lock()
		tools := c.tools
		c.mu.Unlock()
		for _, mt := range c.withResourceTools(tools) {
			if !c.spec.allows(mt.Name) {
				continue
			}
			name := toolName(mt.Name)
			if h.servers > 1 || used[name] {
				name = toolName(c.spec.name + "__" + mt.Name)
			}
			if len(h.keep) > 0 && !slices.Contains(h.keep, mt.Name) && !slices.Contains(h.keep, name) {
				continue
			}
			for base, i := name, 2; used[name]; i++ {
				name = toolName(fmt.Sprintf("%s_%d", base, i))
			}
			t, err := h.tool(c, mt, name)
			if err != nil {
				h.log.Warn("robby: MCP tool left out", slog.String("server", c.spec.name),
					slog.String("tool", mt.Name), slog.Any("error", err))
				continue
			}
			used[name] = true
			out = append(out, t)
		}
	}
	return out
}

func (s MCPServer) allows(tool string) bool {
	if len(s.allow) > 0 && !slices.Contains(s.allow, tool) {
		return false
	}
	return !slices.Contains(s.deny, tool)
}

// toolName makes name fit ^[a-zA-Z0-9_-]{1,64}$; a name cut short ends
// with a hash of the whole, so that two long names stay apart.
func toolName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !nameByte(c) {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "tool"
	}
	if len(b) <= 64 {
		return string(b)
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return fmt.Sprintf("%s_%08x", b[:55], h.Sum32())
}

// tool wraps an MCP tool, keeping its input schema whole unless portable
// schemas were asked for.
func (h *mcpHub) tool(c *mcpConn, mt *mcp.Tool, name string) (Tool, error) {
	raw, err := json.Marshal(mt.InputSchema)
	if err != nil {
		return Tool{}, fmt.Errorf("input schema: %w", err)
	}
	var params shared.FunctionParameters
	if err := json.Unmarshal(raw, &params); err != nil || params == nil {
		return Tool{}, fmt.Errorf("input schema is not a JSON object: %s", raw)
	}
	if typ, ok := params["type"]; !ok {
		params["type"] = "object"
	} else if typ != "object" {
		return Tool{}, fmt.Errorf("input schema is of type %v, not object", typ)
	}
	if h.portable {
		if params, err = portableSchema(params); err != nil {
			return Tool{}, err
		}
	}
	t := Tool{name: name, description: mt.Description, params: params, honorsContext: true}
	// robby checks arguments when it can read the schema; otherwise the
	// server does.
	var s jsonschema.Schema
	if json.Unmarshal(raw, &s) == nil {
		if resolved, err := s.Resolve(nil); err == nil {
			t.schema = resolved
		}
	}
	server, tool := c, mt.Name
	t.bind = func(args json.RawMessage) (invocation, error) {
		return func(ctx context.Context) (any, error) { return server.call(ctx, tool, args) }, nil
	}
	if bind := c.bindResourceTool(mt); bind != nil {
		t.bind = bind
	}
	return t, nil
}

// live returns the session, started again if it died and has not been
// restarted before.
func (c *mcpConn) live(ctx context.Context) (*mcp.ClientSession, error) {
	c.mu.Lock()
	s, down, restarted, cancel := c.session, c.down, c.restarted, c.cancel
	if down && !restarted {
		c.restarted = true
	}
	c.mu.Unlock()
	if !down {
		return s, nil
	}
	if restarted {
		return nil, fmt.Errorf("MCP server %q is down and was restarted once already", c.spec.name)
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

// call calls a tool and renders its result as text for the model.
func (c *mcpConn) call(ctx context.Context, tool string, args json.RawMessage) (string, error) {
	if limit := c.spec.maxMessage(); len(args) > limit {
		return "", fmt.Errorf("arguments of %d bytes are more than MCP server %q accepts in one message (%d bytes)",
			len(args), c.spec.name, limit)
	}
	s, err := c.live(ctx)
	if err != nil {
		return "", err
	}
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	if sink := sinkFrom(ctx); sink != nil {
		// Someone streams: ask for progress and for log messages (the
		// request's level, since protocol 2026-07-28).
		params.Meta = mcp.Meta{mcp.MetaKeyLogLevel: logLevel}
		token := fmt.Sprintf("robby-%d", c.hub.tokens.Add(1))
		params.SetProgressToken(token)
		c.listen(sink, token, tool)
		defer c.unlisten(sink, token)
	}
	res, err := s.CallTool(ctx, params)
	if err != nil {
		var wire *jsonrpc.Error
		if ctx.Err() == nil && !errors.As(err, &wire) {
			// Not an answer from the server: the session is broken.
			c.mu.Lock()
			if c.session == s {
				c.down = true
			}
			c.mu.Unlock()
			s.Close()
			return "", c.fail("calling "+tool, err)
		}
		return "", c.hub.secrets.wrap(fmt.Errorf("MCP server %q: %w", c.spec.name, err))
	}
	text := renderResult(res)
	if res.IsError {
		return "", errors.New(c.hub.secrets.redact(text))
	}
	return text, nil
}

func (c *mcpConn) listen(sink *noticeSink, token, tool string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sinks[sink]++
	c.progress[token] = progressTarget{sink, tool}
}

func (c *mcpConn) unlisten(sink *noticeSink, token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sinks[sink]--; c.sinks[sink] <= 0 {
		delete(c.sinks, sink)
	}
	delete(c.progress, token)
}

func (c *mcpConn) onProgress(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
	p := req.Params
	token, _ := p.ProgressToken.(string)
	c.mu.Lock()
	target, ok := c.progress[token]
	c.mu.Unlock()
	c.hub.log.DebugContext(ctx, "robby: MCP progress", slog.String("server", c.spec.name),
		slog.Float64("progress", p.Progress), slog.Float64("total", p.Total), slog.String("message", p.Message))
	if ok {
		target.sink.send(Notice{Server: c.spec.name, Tool: target.tool, Message: p.Message, Progress: p.Progress, Total: p.Total})
	}
}

func (c *mcpConn) onLog(ctx context.Context, req *mcp.LoggingMessageRequest) {
	p := req.Params
	msg, ok := p.Data.(string)
	if !ok {
		b, _ := json.Marshal(p.Data)
		msg = string(b)
	}
	c.hub.log.InfoContext(ctx, "robby: MCP server log", slog.String("server", c.spec.name),
		slog.String("level", string(p.Level)), slog.String("logger", p.Logger), slog.String("message", msg))
	c.mu.Lock()
	sinks := make([]*noticeSink, 0, len(c.sinks))
	for s := range c.sinks {
		sinks = append(sinks, s)
	}
	c.mu.Unlock()
	for _, s := range sinks {
		s.send(Notice{Server: c.spec.name, Level: string(p.Level), Message: msg})
	}
}

// close ends every session; for a command, its process is asked to exit,
// then terminated after the grace period.
func (h *mcpHub) close() error {
	var errs []error
	for _, c := range h.conns {
		c.mu.Lock()
		s := c.session
		c.mu.Unlock()
		if s == nil {
			continue
		}
		if err := s.Close(); err != nil && !isExitError(err) {
			errs = append(errs, fmt.Errorf("MCP server %q: %w", c.spec.name, err))
		}
		c.cancel()
	}
	return errors.Join(errs...)
}

// isExitError reports the errors a session's close returns for a process
// that had to be terminated or had already died: the process is gone, as
// Close wants.
func isExitError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "signal: terminated") || strings.Contains(msg, "signal: killed") ||
		strings.Contains(msg, "exit status") || strings.Contains(msg, "broken pipe") || strings.Contains(msg, "file already closed")
}

// renderResult turns a tool result into the text of a tool message:
// structured content as JSON when there is some, text joined, and other
// content described, since a tool message carries only text.
func renderResult(res *mcp.CallToolResult) string {
	if res.StructuredContent != nil && !res.IsError {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	parts := make([]string, 0, len(res.Content))
	for _, c := range res.Content {
		parts = append(parts, renderContent(c))
	}
	return strings.Join(parts, "\n")
}

func renderContent(c mcp.Content) string {
	switch c := c.(type) {
	case *mcp.TextContent:
		return c.Text
	case *mcp.ImageContent:
		return fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data))
	case *mcp.AudioContent:
		return fmt.Sprintf("[audio: %s, %d bytes]", c.MIMEType, len(c.Data))
	case *mcp.ResourceLink:
		desc := c.Name
		if c.Description != "" {
			desc += ": " + c.Description
		}
		return fmt.Sprintf("[resource link %s: %s]", c.URI, desc)
	case *mcp.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return "[resource]"
		}
		if r.Text != "" {
			return fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text)
		}
		return fmt.Sprintf("[resource %s: %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob))
	}
	b, _ := json.Marshal(c)
	return string(b)
}
