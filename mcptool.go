package robby

//lint:file-ignore SA1019 MCP logging is deprecated as of protocol 2026-07-28, but servers of older protocols use it, and robby serves both.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/robby-go/robby/internal/mcpwire"

	"github.com/robby-go/robby/internal/schemas"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3/shared"
)

// refresh lists the tools of every server again, after a server announced
// a change. Each listing is bounded by the server's connect timeout, as
// ctx may have no deadline (Agent.Tools). A server that does not answer
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
	next := make(map[string]int) // the next suffix to try for a name taken
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
			if used[name] {
				// Start where the last clash of this name stopped, so
				// 10,000 tools of one name take linear time.
				base, i := name, max(next[name], 2)
				for ; used[name]; i++ {
					name = toolName(fmt.Sprintf("%s_%d", base, i))
				}
				next[base] = i
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

// toolName makes name fit ^[a-zA-Z0-9_-]{1,64}$. A name cut short ends
// with a hash of the whole, so two long names stay apart.
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
	// The client decodes the schema into a JSON value. Robby only ever
	// sets its top-level "type", so a shallow copy is robby's own.
	schema, ok := mt.InputSchema.(map[string]any)
	if !ok {
		raw, _ := json.Marshal(mt.InputSchema)
		return Tool{}, fmt.Errorf("input schema is not a JSON object: %s", raw)
	}
	params := shared.FunctionParameters(maps.Clone(schema))
	if typ, ok := params["type"]; !ok {
		params["type"] = "object"
	} else if typ != "object" {
		return Tool{}, fmt.Errorf("input schema is of type %v, not object", typ)
	}
	if h.portable {
		var err error
		if params, err = schemas.Portable(params); err != nil {
			return Tool{}, err
		}
	}
	idempotent, destructive := c.spec.hinted(mt)
	t := Tool{name: name, description: mt.Description, params: params, honorsContext: true, mcpServer: c.spec.name,
		deferred: c.spec.deferred, idempotent: idempotent, destructive: destructive}
	// robby checks arguments when it can read the schema; otherwise the
	// server does. The schema is resolved when the tool is first called.
	// A server may list thousands of tools, and a run calls a few.
	t.schema = sync.OnceValue(func() *schemas.Args { return resolveSchema(schema) })
	server, tool := c, mt.Name
	t.bind = func(args json.RawMessage) (invocation, error) {
		return func(ctx context.Context) (any, error) { return server.call(ctx, tool, args) }, nil
	}
	if bind := c.bindResourceTool(mt); bind != nil {
		t.bind = bind
	}
	return t, nil
}

// WithToolAnnotations gives the server's tool named tool (as the server
// names it) the annotations a, in place of those the server lists. The
// program's word wins: a server may not be trusted to describe its own
// tools, and many say nothing. Robby reads three hints. ReadOnlyHint or
// IdempotentHint makes the tool [Tool.Idempotent]: a call that a crash
// interrupted runs again, in a stored conversation ([WithConversation]) and
// in a durable run. DestructiveHint true, without ReadOnlyHint, makes it
// [Tool.Destructive]. A tool whose annotations leave DestructiveHint out is
// not marked, though MCP's default is true: robby marks what is said. In an
// mcpServers file, a server's "toolAnnotations" object does the same. Given
// again for one tool, the last wins.
func (s MCPServer) WithToolAnnotations(tool string, a mcp.ToolAnnotations) MCPServer {
	s.hints = maps.Clone(s.hints)
	if s.hints == nil {
		s.hints = make(map[string]mcp.ToolAnnotations, 1)
	}
	s.hints[tool] = a
	return s
}

// hinted reports what the annotations of mt, or the program's in their
// place, say of it: whether it is idempotent, and destructive.
func (s MCPServer) hinted(mt *mcp.Tool) (idempotent, destructive bool) {
	a, ok := s.hints[mt.Name]
	if !ok {
		if mt.Annotations == nil {
			return false, false
		}
		a = *mt.Annotations
	}
	return a.ReadOnlyHint || a.IdempotentHint, !a.ReadOnlyHint && a.DestructiveHint != nil && *a.DestructiveHint
}

// resolveSchema resolves the JSON Schema a server gave, or returns nil if
// robby cannot read it.
func resolveSchema(schema map[string]any) *schemas.Args {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil
	}
	var s jsonschema.Schema
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	if c := schemas.Resolve(&s); c.Err == nil {
		return c
	}
	return nil
}

// call calls a tool and renders its result as text for the model.
func (c *mcpConn) call(ctx context.Context, tool string, args json.RawMessage) (string, error) {
	if limit := c.spec.maxRequest(); len(args) > limit {
		return "", fmt.Errorf("robby: arguments of %d bytes are more than MCP server %q accepts in one message (%d bytes)",
			len(args), c.spec.name, limit)
	}
	ctx, leave, err := c.enter(ctx)
	if err != nil {
		return "", err
	}
	defer leave()
	s, err := c.live(ctx)
	if err != nil {
		return "", err
	}
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	if sink := sinkFrom(ctx); sink != nil {
		// Someone streams: ask for progress and log messages. Since
		// protocol 2026-07-28 the level is set per request.
		params.Meta = mcp.Meta{mcp.MetaKeyLogLevel: logLevel}
		token := fmt.Sprintf("robby-%d", c.hub.tokens.Add(1))
		params.SetProgressToken(token)
		c.listen(sink, token, tool)
		defer c.unlisten(ctx, token)
		ctx = mcpwire.WithCall(ctx, c, token)
	}
	c.hub.tel.injectMeta(ctx, params)
	res, err := s.CallTool(ctx, params)
	if err != nil && closedBy(ctx) {
		return "", fmt.Errorf("MCP server %q: calling %s: %w", c.spec.name, tool, ErrClosed)
	}
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

// renderResult turns a tool result into the text of a tool message, which
// carries only text. Structured content becomes JSON when there is some.
// Text is joined, and other content described.
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
			return fenceResource(r.URI, r.Text)
		}
		return fmt.Sprintf("[resource %s: %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob))
	}
	b, _ := json.Marshal(c)
	return string(b)
}

// mcpConn returns the server of that name, for a call with ctx.
func (a *Agent) mcpConn(ctx context.Context, server string) (*mcpConn, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	select {
	case <-a.core.closed:
		return nil, ErrClosed
	default:
	}
	if h := a.core.tools.hub; h != nil {
		for _, c := range h.conns {
			if c.spec.name == server {
				return c, nil
			}
		}
	}
	return nil, fmt.Errorf("robby: no MCP server %q is connected", server)
}

// mcpSession returns the server of that name and its session. A session
// that died is started again.
func (a *Agent) mcpSession(ctx context.Context, server string) (*mcpConn, *mcp.ClientSession, error) {
	c, err := a.mcpConn(ctx, server)
	if err != nil {
		return nil, nil, err
	}
	s, err := c.live(ctx)
	if err != nil {
		return nil, nil, err
	}
	return c, s, nil
}

// mcpConns returns the connected servers, for a call with ctx. After
// Close it returns none.
func (a *Agent) mcpConns(ctx context.Context) ([]*mcpConn, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	select {
	case <-a.core.closed:
		return nil, nil
	default:
	}
	if h := a.core.tools.hub; h != nil {
		return h.conns, nil
	}
	return nil, nil
}
