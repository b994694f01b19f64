package robby

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/robby-go/robby/internal/mcpwire"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An MCPServer describes an MCP server whose tools the agent offers the
// model. Build one with [MCPCommand], [MCPStreamableHTTP], [MCPSSE],
// [MCPWebSocket] or [MCPTransport]. Adjust it with its With methods and
// give it to [WithMCP]. An MCPServer is a value: its methods return a
// changed copy.
type MCPServer struct {
	name     string
	kind     string // "stdio", "http", "sse", "websocket" or "transport"
	command  string
	args     []string
	env      []string
	inherit  bool
	dir      string
	url      string
	header   http.Header
	client   *http.Client
	t        mcp.Transport
	allow    []string
	deny     []string
	optional bool
	roots    []string
	elicit   func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	oauth    auth.OAuthHandler
	timeout  time.Duration
	grace    time.Duration
	traced   bool // the agent traces: HTTP requests carry the trace context
	deferred bool // its tools are deferred: toolsearch.go
	secrets  []string
	hints    map[string]mcp.ToolAnnotations // by tool: the program's, over the server's (mcptool.go)
}

// Defaults of an [MCPServer].
const (
	// DefaultMCPConnectTimeout bounds connecting to a server and listing
	// its tools.
	DefaultMCPConnectTimeout = 30 * time.Second
	// DefaultMCPGracePeriod is how long [Agent.Close] lets a server end
	// its work. That is the calls in flight and, for a command, the
	// process's exit once its input is closed. Past it, the calls end with
	// [ErrClosed] and the process is terminated.
	DefaultMCPGracePeriod = time.Second
)

// The largest request robby sends to a server. Past these sizes the
// reference servers drop the whole session: a 413 over HTTP, a broken pipe
// over stdio. Robby refuses such a call instead.
const (
	maxStdioMessage = 10 << 20
	maxHTTPMessage  = 4 << 20
)

func newMCPServer(name, kind string) MCPServer {
	return MCPServer{name: name, kind: kind, timeout: DefaultMCPConnectTimeout, grace: DefaultMCPGracePeriod}
}

// MCPCommand is a server run as a subprocess that speaks MCP over its
// standard input and output. Examples are `docker mcp gateway run` and
// `npx @modelcontextprotocol/server-filesystem DIR`.
//
// The subprocess does not inherit the program's environment, which may
// hold secrets such as API keys. It gets PATH, HOME, USER, LANG, TMPDIR
// and what the platform needs to start a process. [MCPServer.WithEnv] adds
// more; [MCPServer.WithInheritedEnv] passes the whole environment instead.
func MCPCommand(name, command string, args ...string) MCPServer {
	s := newMCPServer(name, "stdio")
	s.command, s.args = command, args
	return s
}

// MCPStreamableHTTP is a server reached over MCP's streamable HTTP
// transport, at an endpoint such as "http://localhost:3001/mcp".
func MCPStreamableHTTP(name, url string) MCPServer {
	s := newMCPServer(name, "http")
	s.url = url
	return s
}

// MCPSSE is a server reached over the older HTTP+SSE transport, at an
// endpoint such as "http://localhost:3001/sse". That transport is from
// protocol version 2024-11-05.
func MCPSSE(name, url string) MCPServer {
	s := newMCPServer(name, "sse")
	s.url = url
	return s
}

// MCPWebSocket is a server reached over a WebSocket, at an endpoint such as
// "ws://localhost:3001/mcp". Each text frame holds one JSON-RPC message.
func MCPWebSocket(name, url string) MCPServer {
	s := newMCPServer(name, "websocket")
	s.url = url
	return s
}

// MCPTransport is a server reached through any go-sdk transport, such as
// one end of [mcp.NewInMemoryTransports]. A transport connects once: a
// server that fails is not restarted.
func MCPTransport(name string, t mcp.Transport) MCPServer {
	s := newMCPServer(name, "transport")
	s.t = t
	return s
}

// Name returns the server's name, which prefixes its tools' names when several servers are used.
func (s MCPServer) Name() string { return s.name }

// WithEnv adds "KEY=value" variables to a command server's environment.
func (s MCPServer) WithEnv(env ...string) MCPServer {
	s.env = append(slices.Clip(s.env), env...)
	return s
}

// WithSecrets marks values in the server's description as secrets: in its
// command line, URL, headers or environment. The agent keeps them out of
// its errors and logs. It does the same for its API key, the server's
// header values and the [MCPServer.WithEnv] values. A loader that expands
// variables (package mcpconfig) marks what it put in. Values shorter than
// 8 bytes are not taken for secrets.
func (s MCPServer) WithSecrets(values ...string) MCPServer {
	s.secrets = append(slices.Clip(s.secrets), values...)
	return s
}

// WithInheritedEnv makes a command server inherit the whole environment of
// the program, secrets included.
func (s MCPServer) WithInheritedEnv() MCPServer { s.inherit = true; return s }

// WithDir sets a command server's working directory.
func (s MCPServer) WithDir(dir string) MCPServer { s.dir = dir; return s }

// WithHeader adds a header to the requests to an HTTP, SSE or WebSocket
// server, such as "Authorization: Bearer …". It goes to the server's
// origin (its URL's scheme and host) only, never to a host it redirects to.
func (s MCPServer) WithHeader(key, value string) MCPServer {
	s.header = s.header.Clone()
	if s.header == nil {
		s.header = make(http.Header)
	}
	s.header.Add(key, value)
	return s
}

// WithHTTPClient sets the HTTP client for an HTTP, SSE or WebSocket server.
func (s MCPServer) WithHTTPClient(c *http.Client) MCPServer { s.client = c; return s }

// WithAllow keeps only the server's tools with these names, as the server
// names them.
func (s MCPServer) WithAllow(tools ...string) MCPServer {
	s.allow = append(slices.Clip(s.allow), tools...)
	return s
}

// WithDeny leaves out the server's tools with these names.
func (s MCPServer) WithDeny(tools ...string) MCPServer {
	s.deny = append(slices.Clip(s.deny), tools...)
	return s
}

// WithOptional lets the agent start without the server when it cannot be
// reached. The failure is logged.
func (s MCPServer) WithOptional() MCPServer { s.optional = true; return s }

// WithRoots advertises the roots capability with these URIs, such as
// "file:///home/me/project". Without roots, robby advertises none. Some
// servers (the filesystem one) replace their configured directories with
// the client's roots.
func (s MCPServer) WithRoots(uris ...string) MCPServer {
	s.roots = append(slices.Clip(s.roots), uris...)
	return s
}

// WithElicitation advertises the elicitation capability and answers the
// server's elicitation/create requests with h. Such a request asks the user
// for input while one of the server's tools runs. For a form, the schema's
// defaults fill the fields that h's accepted content leaves out. Without
// h, robby advertises no elicitation and such requests fail.
func (s MCPServer) WithElicitation(h func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) MCPServer {
	s.elicit = h
	return s
}

// WithConnectTimeout bounds connecting and listing tools (default
// [DefaultMCPConnectTimeout]).
func (s MCPServer) WithConnectTimeout(d time.Duration) MCPServer { s.timeout = d; return s }

// WithGracePeriod sets how long [Agent.Close] waits for the server's calls
// in flight and, for a command, its process's exit. Then it cancels the
// calls and terminates the process. The default is [DefaultMCPGracePeriod].
func (s MCPServer) WithGracePeriod(d time.Duration) MCPServer { s.grace = d; return s }

// Validate reports what [WithMCP] would refuse of s: no name, no MCP
// constructor, or a part its kind needs missing. A loader of server
// descriptions can call it to report a faulty entry where it read it.
func (s MCPServer) Validate() error {
	if s.name == "" {
		return errors.New("robby: MCP server with no name")
	}
	switch s.kind {
	case "stdio":
		if s.command == "" {
			return fmt.Errorf("robby: MCP server %q: no command", s.name)
		}
	case "http", "sse", "websocket":
		if s.url == "" {
			return fmt.Errorf("robby: MCP server %q: no URL", s.name)
		}
	case "transport":
		if s.t == nil {
			return fmt.Errorf("robby: MCP server %q: nil transport", s.name)
		}
	default:
		return fmt.Errorf("robby: MCP server %q: not built with an MCP constructor", s.name)
	}
	if s.timeout <= 0 {
		return fmt.Errorf("robby: MCP server %q: connect timeout must be positive", s.name)
	}
	if s.oauth != nil && s.kind != "http" {
		return fmt.Errorf("robby: MCP server %q: OAuth is for streamable HTTP servers only", s.name)
	}
	return nil
}

// maxRequest is the largest request robby sends the server.
func (s MCPServer) maxRequest() int {
	if s.kind == "stdio" || s.kind == "transport" {
		return maxStdioMessage
	}
	return maxHTTPMessage
}

// transport makes a new transport for each connection, so a server that
// died can start again. stderr receives a command's errors.
func (s MCPServer) transport(stderr *tailBuffer) (mcp.Transport, error) {
	switch s.kind {
	case "stdio":
		cmd := exec.Command(s.command, s.args...)
		cmd.Dir = s.dir
		cmd.Env = s.environ()
		cmd.Stderr = stderr
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: s.grace}, nil
	case "http":
		return &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: s.httpClient(), MaxRetries: 2, OAuthHandler: s.oauth}, nil
	case "sse":
		return &mcp.SSEClientTransport{Endpoint: s.url, HTTPClient: s.httpClient()}, nil
	case "websocket":
		return mcpwire.NewWebSocketTransport(s.url, s.header, s.wsClient()), nil
	}
	t := s.t
	if t == nil {
		return nil, errors.New("robby: its transport was used already and cannot reconnect")
	}
	return t, nil
}

// passedEnv lists what a command server gets from the program's
// environment by default. It is enough to find programs and start, and
// holds no secrets.
var passedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TMPDIR", "TZ",
	"SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT", "APPDATA", "LOCALAPPDATA", "USERPROFILE", "TEMP", "TMP"}

func (s MCPServer) environ() []string {
	var env []string
	if s.inherit {
		env = os.Environ()
	} else {
		for _, k := range passedEnv {
			if v, ok := os.LookupEnv(k); ok {
				env = append(env, k+"="+v)
			}
		}
	}
	if runtime.GOOS == "windows" && len(env) == 0 {
		env = os.Environ()
	}
	return append(env, s.env...)
}

// httpClient returns the client for a remote server, adding its headers to
// every request.
func (s MCPServer) httpClient() *http.Client {
	base := s.client
	if base == nil {
		base = defaultMCPClient()
	}
	if len(s.header) == 0 && !s.traced {
		return base
	}
	c := *base
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = mcpwire.HeaderTransport{Header: s.header, Origin: mcpwire.Origin(s.url), Next: rt, Traced: s.traced}
	return &c
}

// wsClient returns the client that dials a WebSocket server. A redirect to
// another origin drops the server's headers. Go's client would pass them
// on: all but Authorization and Cookie, and those to another port.
func (s MCPServer) wsClient() *http.Client {
	if len(s.header) == 0 {
		return s.client
	}
	c := http.Client{}
	if s.client != nil {
		c = *s.client
	}
	check, home := c.CheckRedirect, mcpwire.Origin(s.url)
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if mcpwire.Origin(req.URL.String()) != home {
			for k := range s.header {
				req.Header.Del(k)
			}
		}
		if check != nil {
			return check(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

// WithMCP connects the agent to MCP servers and offers their tools to the
// model. [New] connects to every server in parallel. It fails if a server
// not marked [MCPServer.WithOptional] cannot be reached. [Agent.Close]
// ends the sessions and their subprocesses.
//
// With one server, tools keep their names unless one clashes with a local
// tool. With several, every MCP tool is named server__tool. Names are made
// to fit the API's ^[a-zA-Z0-9_-]{1,64}$ and map back exactly.
func WithMCP(servers ...MCPServer) Option {
	return func(c *config) error {
		for _, s := range servers {
			if err := s.Validate(); err != nil {
				return err
			}
			for _, o := range c.mcp {
				if o.name == s.name {
					return fmt.Errorf("robby: MCP server %q: duplicate name", s.name)
				}
			}
			c.mcp = append(c.mcp, s)
		}
		return nil
	}
}

// WithMCPTools keeps only the MCP tools with these names. A name is the
// one the server gives, or the server__tool name the model sees.
func WithMCPTools(names ...string) Option {
	return func(c *config) error {
		c.mcpTools = append(c.mcpTools, names...)
		return nil
	}
}

// tailBuffer keeps the last lines a subprocess wrote to its stderr, for
// error messages.
type tailBuffer struct {
	mu    sync.Mutex
	lines []string
	part  []byte
}

const tailLines = 20

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.part = append(b.part, p...)
	for {
		i := slices.Index(b.part, '\n')
		if i < 0 {
			break
		}
		b.lines = append(b.lines, strings.TrimRight(string(b.part[:i]), "\r"))
		b.part = b.part[i+1:]
	}
	if len(b.part) > 4096 {
		b.lines, b.part = append(b.lines, string(b.part)), nil
	}
	if n := len(b.lines); n > tailLines {
		b.lines = slices.Clone(b.lines[n-tailLines:])
	}
	return len(p), nil
}

// String returns the last lines, joined.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := b.lines
	if len(b.part) > 0 {
		lines = append(slices.Clip(lines), string(b.part))
	}
	return strings.Join(lines, "\n")
}

// WithOAuth authorizes the requests to a streamable-HTTP server with h, the
// go-sdk's OAuth 2.1 client. It adds the token h gives to every request.
// When the server answers 401 or 403, h runs the authorization flow and
// the request is retried once. The flow covers protected-resource and
// authorization-server metadata discovery, client ID metadata documents,
// pre-registered or dynamic client registration, PKCE authorization codes,
// token refresh, and step-up to the scopes a 403 insufficient_scope asks
// for.
//
// Package mcpoauth makes h for a host. It opens the browser on the
// authorization URL with a loopback redirect, or calls a function of the
// program's. It has pre-registered clients, client credentials for
// machines, and tokens kept in memory or in a store (an encrypted file).
// Any auth.OAuthHandler works, such as the go-sdk's
// auth.NewAuthorizationCodeHandler. Tokens live in h, never in robby's
// logs or errors. New reports an error for a server of another transport.
func (s MCPServer) WithOAuth(h auth.OAuthHandler) MCPServer {
	s.oauth = h
	return s
}

// allows reports whether s lets the agent have the tool (WithAllow, WithDeny).
func (s MCPServer) allows(tool string) bool {
	if len(s.allow) > 0 && !slices.Contains(s.allow, tool) {
		return false
	}
	return !slices.Contains(s.deny, tool)
}
