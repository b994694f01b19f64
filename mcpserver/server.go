// Package mcpserver serves a robby agent as an MCP server, so any MCP host
// (Claude Desktop, Cursor, VS Code, another agent) can call it. It complements
// the root package, whose agents are MCP clients.
//
//	agent, err := robby.New(robby.WithModel("ai/qwen2.5"), robby.WithTools(...))
//	...
//	srv, err := mcpserver.New(agent, mcpserver.Options{Name: "researcher"})
//	...
//	err = srv.Run(ctx, &mcp.StdioTransport{}) // or: http.Handle("/mcp", srv)
//
// The agent is one tool, ask: a prompt in, the agent's answer out. The answer
// is text or, with [Options.OutputSchema], structured content. A host may ask
// for progress with a progressToken in the call's _meta. It then gets a
// progress notification for each step while the agent works: a tool called, a
// tool done, an MCP server's own progress, a turn ended.
//
// Every call is a conversation of its own, in a fresh [robby.Agent.Clone] of
// the agent given to [New]. Calls share nothing but the agent's configuration
// and tools, and run concurrently. A host cannot see what another asked. MCP
// tools are stateless in this way: a host that wants a follow-up sends the
// context it needs in the prompt.
//
// A traced agent ([robby.WithTracerProvider]) joins its host's trace. The run's
// span is a child of the one the call names in its _meta or its HTTP headers.
// (_meta holds a traceparent, as robby's own MCP client sends it.)
//
// The go-sdk does the protocol: JSON-RPC, the stdio and streamable-HTTP
// transports, and cancellation. A cancelled call cancels the run and its tools.
package mcpserver

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/mcpmeta"
)

// ToolName is the name of the one tool a [Server] offers.
const ToolName = "ask"

// DefaultDescription describes the ask tool when [Options.Description] is
// empty.
const DefaultDescription = "Ask an AI agent to do a task or answer a question, with the tools it has. " +
	"Each call starts a new conversation: put everything the agent needs in the prompt."

// Options configures a [Server]. The zero value serves the agent as
// "robby", with no authentication.
type Options struct {
	// Name identifies the server to hosts (default "robby"); Title is its
	// human-readable name (default none).
	Name, Title string
	// Version is the server's version (default robby's module version).
	Version string
	// Instructions tell the host's model how to use the server (default
	// none).
	Instructions string
	// Description is the ask tool's description, which the host's model
	// reads to decide when to call it (default [DefaultDescription]).
	Description string
	// OutputSchema, if set, is the JSON Schema of the answer, an object. The
	// ask tool declares it as its output schema. The agent is asked for its
	// answer as robby.RunTyped asks: validated and repaired (see
	// robby.WithAnswerSchema). A call returns the answer as structured content,
	// its JSON also as text. The default is a text answer. [New] fails if it is
	// not a valid schema of an object.
	OutputSchema map[string]any
	// AnswerMode is how the answer of an OutputSchema is asked for
	// (default robby.AnswerAuto; see robby.WithAnswerMode).
	AnswerMode robby.AnswerMode
	// MaxRepairs is how many times an answer that does not fit the OutputSchema
	// goes back to the model to be repaired. 0 means robby.DefaultMaxRepairs, a
	// negative number none (see robby.WithMaxRepairs).
	MaxRepairs int
	// Token, if set, is the bearer token every HTTP request must carry
	// ("Authorization: Bearer <token>", the scheme in any case). Others are
	// answered 401. It has no effect over stdio. To accept OAuth tokens
	// instead, leave it empty and wrap the server with the go-sdk's
	// auth.RequireBearerToken.
	Token string
	// Logger receives the failures of calls, with the id the host reads,
	// and the go-sdk's log of the server's activity. The default discards
	// them.
	Logger *slog.Logger
}

// A Server serves an agent over MCP as the ask tool. It is an
// [http.Handler] for MCP's streamable HTTP transport, and [Server.Run]
// serves it over any other go-sdk transport, such as stdio.
//
// A Server is safe for concurrent use: each call runs in a clone of the
// agent. Closing the agent is the caller's job, once the server is done.
type Server struct {
	agent   *robby.Agent
	opts    Options
	output  *jsonschema.Schema // Options.OutputSchema, read; nil for a text answer
	typed   []robby.RunOption  // the options of a typed run, with an output schema
	schemas *mcp.SchemaCache
	http    http.Handler
}

// New returns a server for agent. opts is copied. It fails on options it
// cannot serve. Those are an OutputSchema that is not a valid JSON Schema of an
// object, an unknown AnswerMode, or an AnswerMode or MaxRepairs without an
// OutputSchema.
func New(agent *robby.Agent, opts Options) (*Server, error) {
	if agent == nil {
		return nil, errors.New("mcpserver: New: nil agent")
	}
	s := &Server{agent: agent, opts: opts, schemas: mcp.NewSchemaCache()}
	if err := s.typedAnswer(); err != nil {
		return nil, err
	}
	if s.opts.Name == "" {
		s.opts.Name = "robby"
	}
	if s.opts.Version == "" {
		s.opts.Version = moduleVersion()
	}
	if s.opts.Description == "" {
		s.opts.Description = DefaultDescription
	}
	if s.opts.Logger == nil {
		s.opts.Logger = slog.New(slog.DiscardHandler)
	}
	s.http = s.handler()
	return s, nil
}

// typedAnswer reads the options of a typed answer: the output schema, the
// answer mode and the repairs.
func (s *Server) typedAnswer() error {
	o := &s.opts
	if o.OutputSchema == nil {
		if o.AnswerMode != robby.AnswerAuto || o.MaxRepairs != 0 {
			return errors.New("mcpserver: Options.AnswerMode and MaxRepairs are those of an OutputSchema's answer: give one")
		}
		return nil
	}
	if o.AnswerMode < robby.AnswerAuto || o.AnswerMode > robby.AnswerPrompted {
		return fmt.Errorf("mcpserver: Options.AnswerMode: unknown mode %v", o.AnswerMode)
	}
	schema, err := outputSchema(o.OutputSchema)
	if err != nil {
		return fmt.Errorf("mcpserver: Options.OutputSchema: %w", err)
	}
	// A copy of the caller's map, read back from the schema: changing
	// the map later changes nothing here.
	o.OutputSchema = nil
	if err := remarshal(schema, &o.OutputSchema); err != nil {
		return fmt.Errorf("mcpserver: Options.OutputSchema: %w", err)
	}
	repairs := o.MaxRepairs
	switch {
	case repairs == 0:
		repairs = robby.DefaultMaxRepairs
	case repairs < 0:
		repairs = 0
	}
	s.output = schema
	s.typed = []robby.RunOption{robby.WithAnswerSchema(o.OutputSchema), robby.WithAnswerMode(o.AnswerMode), robby.WithMaxRepairs(repairs)}
	return nil
}

// newMCP returns a go-sdk server offering the ask tool, whose calls end
// when done is.
func (s *Server) newMCP(done context.Context) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: s.opts.Name, Title: s.opts.Title, Version: s.opts.Version},
		&mcp.ServerOptions{
			Instructions: s.opts.Instructions,
			Logger:       s.opts.Logger,
			SchemaCache:  s.schemas,
			// Tools only: no logging capability, which the agent has
			// nothing to say through.
			Capabilities: &mcp.ServerCapabilities{},
		})
	tool := &mcp.Tool{
		Name:        ToolName,
		Description: s.opts.Description,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(true)},
	}
	if s.output != nil {
		tool.OutputSchema = s.output // one pointer: the go-sdk resolves it once
	}
	mcp.AddTool(srv, tool, func(ctx context.Context, req *mcp.CallToolRequest, in askInput) (*mcp.CallToolResult, any, error) {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(done, func() { cancel(context.Cause(done)) })
		defer stop()
		return s.ask(s.traceContext(ctx, req), req, in)
	})
	return srv
}

// traceContext returns ctx with the trace context a call carries, if the agent
// is traced (see [robby.Agent.TraceContext]). It reads the call's _meta, where
// MCP's semantic conventions put it over any transport. Otherwise it reads the
// headers of its HTTP request.
func (s *Server) traceContext(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	if len(req.Params.Meta) > 0 {
		ctx = s.agent.TraceContext(ctx, mcpmeta.Carrier(req.Params.Meta))
	}
	if req.Extra != nil && len(req.Extra.Header) > 0 {
		ctx = s.agent.TraceContext(ctx, propagation.HeaderCarrier(req.Extra.Header))
	}
	return ctx
}

// Run serves the server over one transport, such as &mcp.StdioTransport{},
// until the client ends the session or ctx is done.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.newMCP(ctx).Run(ctx, t)
}

// ServeHTTP serves MCP's streamable HTTP transport, statelessly. Every request
// stands alone, as every call is a conversation of its own. The server keeps no
// session between requests. A call ends when its HTTP request does: a host that
// goes away cancels the run. Some requests are refused: those with the wrong
// token ([Options.Token]), those from another origin's web page, and (on a
// loopback address) those with another host's name, as in DNS rebinding.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.http.ServeHTTP(w, r)
}

func (s *Server) handler() http.Handler {
	// A server for each request, so its calls end with it. Before protocol
	// version 2026-07-28, a stateless server would miss the client's
	// notifications/cancelled, sent in another request.
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server { return s.newMCP(r.Context()) },
		&mcp.StreamableHTTPOptions{Stateless: true, Logger: s.opts.Logger})
	// Browsers let any page POST to localhost: refuse cross-origin requests.
	h = http.NewCrossOriginProtection().Handler(h)
	if s.opts.Token != "" {
		token := []byte(s.opts.Token)
		verify := func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
			if subtle.ConstantTimeCompare([]byte(got), token) != 1 {
				return nil, auth.ErrInvalidToken
			}
			return &auth.TokenInfo{}, nil
		}
		h = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	}
	return h
}

// moduleVersion returns robby's version as the binary records it.
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	const path = "github.com/robby-go/robby"
	if bi.Main.Path == path && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	for _, m := range bi.Deps {
		if m.Path == path {
			return m.Version
		}
	}
	return "devel"
}

// outputSchema reads Options.OutputSchema: a valid JSON Schema of an
// object.
func outputSchema(m map[string]any) (*jsonschema.Schema, error) {
	var schema jsonschema.Schema
	if err := remarshal(m, &schema); err != nil {
		return nil, err
	}
	if schema.Type != "object" {
		return nil, fmt.Errorf("the answer must be an object: give the schema \"type\": \"object\", not %q", schema.Type)
	}
	if _, err := schema.Resolve(nil); err != nil {
		return nil, err
	}
	return &schema, nil
}

// remarshal sets to what from is, through JSON.
func remarshal(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}
