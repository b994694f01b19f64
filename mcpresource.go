package robby

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby/internal/randid"
)

// The tools robby offers the model for an MCP server's resources. They are
// named like the server's own tools: server__read_resource with several
// servers.
const (
	readResourceTool  = "read_resource"
	listResourcesTool = "list_resources"
)

// maxListedResources bounds how many resources and templates the
// description of read_resource lists. Past it, or when the server pages
// its list, the model gets list_resources as well.
const maxListedResources = 20

// resourceToolKey marks which resource tool a tool is, in the Meta of the
// tools robby makes for a server's resources.
const resourceToolKey = "robby/resource-tool"

// An MCPResourceInfo is a resource an MCP server offers.
type MCPResourceInfo struct {
	Server string // the server's name
	*mcp.Resource
}

// resourceState is what robby knows of a server's resources. It holds the
// first page of its resources and templates, and the program's
// subscriptions.
type resourceState struct {
	mu        sync.Mutex
	supported bool // the server has the resources capability
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	more      bool                     // the server has more than that first page
	subs      map[string][]*subscriber // by URI
}

type subscriber struct{ updated func(uri string) }

// listResources fetches the first page of the server's resources and
// templates. A server without resources has none. One whose listing fails
// keeps what it had.
func (c *mcpConn) listResources(ctx context.Context, s *mcp.ClientSession) {
	init := s.InitializeResult()
	if init == nil || init.Capabilities == nil || init.Capabilities.Resources == nil {
		return
	}
	rs, err := s.ListResources(ctx, nil)
	if err != nil {
		c.hub.log.WarnContext(ctx, "robby: listing MCP resources", slog.String("server", c.spec.name), slog.Any("error", err))
		return
	}
	// Templates are optional: a server may not implement their listing.
	ts, err := s.ListResourceTemplates(ctx, nil)
	if err != nil {
		ts = &mcp.ListResourceTemplatesResult{}
	}
	c.res.mu.Lock()
	defer c.res.mu.Unlock()
	c.res.supported = true
	c.res.resources, c.res.templates = rs.Resources, ts.ResourceTemplates
	c.res.more = rs.NextCursor != "" || ts.NextCursor != ""
}

// withResourceTools returns the server's tools, plus the tools that read
// and list its resources if it has some.
func (c *mcpConn) withResourceTools(tools []*mcp.Tool) []*mcp.Tool {
	c.res.mu.Lock()
	defer c.res.mu.Unlock()
	n := len(c.res.resources) + len(c.res.templates)
	if n == 0 {
		return tools
	}
	out := append(tools[:len(tools):len(tools)], c.readResourceTool())
	if n > maxListedResources || c.res.more {
		out = append(out, &mcp.Tool{
			Name: listResourcesTool,
			Description: "List the resources and resource templates of MCP server " + c.spec.name +
				", a page at a time, to find the URI to give " + readResourceTool + ".",
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{
				"cursor": map[string]any{"type": "string", "description": "the cursor a previous page gave, to get the next"},
			}},
			Meta: mcp.Meta{resourceToolKey: listResourcesTool},
		})
	}
	return out
}

// readResourceTool describes read_resource, listing the resources it can
// read. c.res.mu is held.
func (c *mcpConn) readResourceTool() *mcp.Tool {
	var d strings.Builder
	fmt.Fprintf(&d, "Read a resource of MCP server %s by its URI.", c.spec.name)
	listed := 0
	for _, r := range c.res.resources {
		if listed == maxListedResources {
			break
		}
		if listed == 0 {
			d.WriteString(" Resources:")
		}
		fmt.Fprintf(&d, "\n- %s", r.URI)
		describe(&d, r.Name, r.Title, r.Description)
		listed++
	}
	for i, t := range c.res.templates {
		if listed == maxListedResources {
			break
		}
		if i == 0 {
			d.WriteString("\nURI templates (fill in the {variables}):")
		}
		fmt.Fprintf(&d, "\n- %s", t.URITemplate)
		describe(&d, t.Name, t.Title, t.Description)
		listed++
	}
	if listed < len(c.res.resources)+len(c.res.templates) || c.res.more {
		fmt.Fprintf(&d, "\nThere are more: %s lists them all.", listResourcesTool)
	}
	return &mcp.Tool{
		Name:        readResourceTool,
		Description: d.String(),
		InputSchema: map[string]any{"type": "object", "required": []any{"uri"}, "properties": map[string]any{
			"uri": map[string]any{"type": "string", "description": "the resource's URI"},
		}},
		Meta: mcp.Meta{resourceToolKey: readResourceTool},
	}
}

func describe(d *strings.Builder, name, title, description string) {
	if title != "" {
		name = title
	}
	if name != "" {
		fmt.Fprintf(d, " (%s)", name)
	}
	if description != "" {
		fmt.Fprintf(d, ": %s", strings.Join(strings.Fields(description), " "))
	}
}

// bindResourceTool returns how a call of a resource tool runs. It returns
// nil if mt is the server's own.
func (c *mcpConn) bindResourceTool(mt *mcp.Tool) func(json.RawMessage) (invocation, error) {
	kind, _ := mt.Meta[resourceToolKey].(string)
	switch kind {
	case readResourceTool:
		return decoded(func(ctx context.Context, in struct {
			URI string `json:"uri"`
		}) (string, error) {
			res, err := c.readResource(ctx, in.URI)
			if err != nil {
				return "", err
			}
			return renderResourceContents(res.Contents), nil
		})
	case listResourcesTool:
		return decoded(func(ctx context.Context, in struct {
			Cursor string `json:"cursor"`
		}) (string, error) {
			return c.listResourcesPage(ctx, in.Cursor)
		})
	}
	return nil
}

// readResource reads the resource at uri.
func (c *mcpConn) readResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	if uri == "" {
		return nil, errors.New("robby: no URI")
	}
	s, err := c.live(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, c.hub.secrets.wrap(fmt.Errorf("MCP server %q: reading %s: %w", c.spec.name, uri, err))
	}
	return res, nil
}

// listResourcesPage renders a page of the server's resources for the
// model. The first page has its templates too.
func (c *mcpConn) listResourcesPage(ctx context.Context, cursor string) (string, error) {
	s, err := c.live(ctx)
	if err != nil {
		return "", err
	}
	rs, err := s.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
	if err != nil {
		return "", c.hub.secrets.wrap(fmt.Errorf("MCP server %q: listing resources: %w", c.spec.name, err))
	}
	var b strings.Builder
	for _, r := range rs.Resources {
		b.WriteString(r.URI)
		describe(&b, r.Name, r.Title, r.Description)
		b.WriteByte('\n')
	}
	if cursor == "" {
		if ts, err := s.ListResourceTemplates(ctx, nil); err == nil {
			for _, t := range ts.ResourceTemplates {
				fmt.Fprintf(&b, "template %s", t.URITemplate)
				describe(&b, t.Name, t.Title, t.Description)
				b.WriteByte('\n')
			}
		}
	}
	if rs.NextCursor != "" {
		fmt.Fprintf(&b, "More: call %s with cursor %q.\n", listResourcesTool, rs.NextCursor)
	}
	return b.String(), nil
}

// renderResourceContents turns a resource's contents into text for the
// model. Text is fenced ([fenceResource]); binary contents are described.
func renderResourceContents(contents []*mcp.ResourceContents) string {
	parts := make([]string, 0, len(contents))
	for _, rc := range contents {
		if rc == nil {
			continue
		}
		if rc.Blob != nil {
			parts = append(parts, fmt.Sprintf("[resource %s: %s, %d bytes]", rc.URI, rc.MIMEType, len(rc.Blob)))
			continue
		}
		parts = append(parts, fenceResource(rc.URI, rc.Text))
	}
	return strings.Join(parts, "\n")
}

// fenceResource gives the model a resource's text as knowledge passages are
// given. It lies between lines holding a nonce drawn for it, after a line
// naming its URI. The server cannot know the nonce. So the text cannot close
// its resource and open another, posing as another resource or as robby's
// own words.
func fenceResource(uri, text string) string {
	nonce := randid.Alnum(16)
	return "<resource " + nonce + ">\n[resource " + lineBreaks.Replace(uri) + "]\n" + text + "\n</resource " + nonce + ">"
}

// lineBreaks turns a URI's line breaks into spaces: it holds no line of
// its own in a fence's head.
var lineBreaks = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\u2028", " ", "\u2029", " ")

// onResourcesChanged marks the server's resources and tools for listing
// again before the next turn.
func (c *mcpConn) onResourcesChanged(context.Context, *mcp.ResourceListChangedRequest) {
	c.hub.changed.Store(true)
}

// onResourceUpdated tells the program's subscribers of the resource.
func (c *mcpConn) onResourceUpdated(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	uri := req.Params.URI
	c.res.mu.Lock()
	subs := append([]*subscriber(nil), c.res.subs[uri]...)
	c.res.mu.Unlock()
	c.hub.log.DebugContext(ctx, "robby: MCP resource updated", slog.String("server", c.spec.name), slog.String("uri", uri))
	for _, s := range subs {
		s.updated(uri)
	}
}

// MCPResources lists the resources of every connected MCP server, every
// page, in the servers' order.
func (a *Agent) MCPResources(ctx context.Context) ([]MCPResourceInfo, error) {
	conns, err := a.mcpConns(ctx)
	if err != nil {
		return nil, err
	}
	var out []MCPResourceInfo
	for _, c := range conns {
		c.res.mu.Lock()
		supported := c.res.supported
		c.res.mu.Unlock()
		if !supported {
			continue
		}
		s, err := c.live(ctx)
		if err != nil {
			return out, err
		}
		for r, err := range s.Resources(ctx, nil) {
			if err != nil {
				return out, c.hub.secrets.wrap(fmt.Errorf("MCP server %q: listing resources: %w", c.spec.name, err))
			}
			out = append(out, MCPResourceInfo{Server: c.spec.name, Resource: r})
		}
	}
	return out, nil
}

// ReadMCPResource reads the resource at uri of the named MCP server. The
// uri is one listed, or one made from the server's URI templates.
func (a *Agent) ReadMCPResource(ctx context.Context, server, uri string) (*mcp.ReadResourceResult, error) {
	c, err := a.mcpConn(ctx, server)
	if err != nil {
		return nil, err
	}
	res, err := c.readResource(ctx, uri)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// AttachMCPResource reads a resource of the named MCP server. It adds it
// to the conversation as a user message, for the model to read with the
// next prompt. Text is bounded like a tool's output ([WithMaxToolOutput]),
// and fenced as knowledge passages are: it cannot pose as another resource.
// Images become image parts; other binary contents are described.
func (a *Agent) AttachMCPResource(ctx context.Context, server, uri string) error {
	res, err := a.ReadMCPResource(ctx, server, uri)
	if err != nil {
		return err
	}
	max := a.core.tools.policy.maxOutput
	var parts []openai.ChatCompletionContentPartUnionParam
	for _, rc := range res.Contents {
		if rc == nil {
			continue
		}
		switch {
		case rc.Blob != nil && strings.HasPrefix(rc.MIMEType, "image/"):
			parts = append(parts, openai.TextContentPart(fmt.Sprintf("[resource %s]", rc.URI)),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{
					URL: "data:" + rc.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(rc.Blob)}))
		case rc.Blob != nil:
			parts = append(parts, openai.TextContentPart(fmt.Sprintf("[resource %s: %s, %d bytes]", rc.URI, rc.MIMEType, len(rc.Blob))))
		default:
			parts = append(parts, openai.TextContentPart(fenceResource(rc.URI, fitOutput(rc.Text, max))))
		}
	}
	if len(parts) == 0 {
		return fmt.Errorf("robby: MCP server %q: resource %s has no contents", server, uri)
	}
	a.AddMessages(openai.UserMessage(parts))
	return nil
}

// SubscribeMCPResource asks the named MCP server to tell when the resource
// at uri changes. Each time it does, updated is called with its URI, until
// ctx is done. updated runs on the session's goroutine: it must return
// quickly, and read the resource again elsewhere. It fails if the server
// does not offer subscriptions.
func (a *Agent) SubscribeMCPResource(ctx context.Context, server, uri string, updated func(uri string)) error {
	if updated == nil {
		return errors.New("robby: SubscribeMCPResource: nil function")
	}
	c, s, err := a.mcpSession(ctx, server)
	if err != nil {
		return err
	}
	if init := s.InitializeResult(); init == nil || init.Capabilities == nil || init.Capabilities.Resources == nil ||
		!init.Capabilities.Resources.Subscribe {
		return fmt.Errorf("robby: MCP server %q does not offer resource subscriptions", server)
	}
	sub := &subscriber{updated: updated}
	c.res.mu.Lock()
	if c.res.subs == nil {
		c.res.subs = map[string][]*subscriber{}
	}
	first := len(c.res.subs[uri]) == 0
	c.res.subs[uri] = append(c.res.subs[uri], sub)
	c.res.mu.Unlock()
	if first {
		if err := s.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			c.unsubscribe(context.WithoutCancel(ctx), uri, sub)
			return c.hub.secrets.wrap(fmt.Errorf("MCP server %q: subscribing to %s: %w", server, uri, err))
		}
	}
	context.AfterFunc(ctx, func() { c.unsubscribe(context.WithoutCancel(ctx), uri, sub) })
	return nil
}

// unsubscribe removes a subscriber. With the last one, it ends the
// server's subscription.
func (c *mcpConn) unsubscribe(ctx context.Context, uri string, sub *subscriber) {
	c.res.mu.Lock()
	subs := c.res.subs[uri]
	for i, s := range subs {
		if s == sub {
			subs = append(subs[:i:i], subs[i+1:]...)
			break
		}
	}
	if len(subs) > 0 {
		c.res.subs[uri] = subs
		c.res.mu.Unlock()
		return
	}
	delete(c.res.subs, uri)
	c.res.mu.Unlock()
	c.mu.Lock()
	s, down := c.session, c.down
	c.mu.Unlock()
	if s == nil || down {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, c.spec.timeout)
	defer cancel()
	if err := s.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		c.hub.log.DebugContext(ctx, "robby: MCP unsubscribe", slog.String("server", c.spec.name), slog.Any("error", err))
	}
}
