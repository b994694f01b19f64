package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/robby-go/robby/mcpserver"
)

// defaultMCPAddr is where `robby mcp -http` listens unless told otherwise:
// loopback only, next to serve's port.
const defaultMCPAddr = "127.0.0.1:8090"

var mcpCommand = commandSpec{
	name: "mcp", synopsis: "robby mcp [flags]",
	summary: "serve the agent as an MCP server (its tool: " + mcpserver.ToolName + "), over stdio or -http",
	about: "Serves the agent as the MCP tool " + mcpserver.ToolName + ", over stdio, or with -http over streamable HTTP at /mcp.\n" +
		"With -http it listens on " + defaultMCPAddr + "; on any other address it needs a bearer token\n" +
		"(-token, -token-file or ROBBY_TOKEN, as robby serve takes them), or -insecure-no-token. With -schema FILE, " + mcpserver.ToolName + " declares the schema as its\n" +
		"output schema and answers with JSON that fits it, as structured content.",
	env: slices.Concat(tokenEnv, agentEnv), setup: setupMCP,
}

// mcpFlags are robby mcp's flags.
type mcpFlags struct {
	agentFlags
	schema            schemaFlags
	http              bool
	addr              string
	tokens            tokenFlags
	name, description string
}

func (m *mcpFlags) register(fs *flag.FlagSet) {
	m.agentFlags.register(fs)
	m.schema.register(fs, "a JSON Schema file (of an object): the ask tool's output schema; each answer is JSON validated against it, returned as structured content")
	fs.BoolVar(&m.http, "http", false, "serve streamable HTTP on -addr instead of stdio")
	fs.StringVar(&m.addr, "addr", defaultMCPAddr, "address to listen on with -http")
	m.tokens.register(fs)
	fs.StringVar(&m.name, "name", "robby", "the server's name, as hosts show it")
	fs.StringVar(&m.description, "description", mcpserver.DefaultDescription, "the ask tool's description, which the host's model reads")
}

func setupMCP(c *command) func(context.Context) error {
	var m mcpFlags
	m.register(c.fs)
	return func(ctx context.Context) error {
		if name := visited(c.fs, "token", "token-file", "insecure-no-token"); name != "" && !m.http {
			return usageError{fmt.Errorf("-%s works with -http only: over stdio, the host that starts robby mcp is its one client", name)}
		}
		return m.serve(ctx, c.stdin, c.stdout, c.stderr)
	}
}

// serve serves the agent over MCP until ctx is done or, on stdio, the host
// ends the session.
func (m *mcpFlags) serve(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	f, sf := &m.agentFlags, &m.schema
	var tokens serveTokens
	if m.http {
		if err := checkAddr(m.addr); err != nil {
			return err
		}
		var err error
		if tokens, err = m.tokens.resolve(m.addr); err != nil {
			return err
		}
	}
	typed, err := sf.read()
	if err != nil {
		return err
	}
	agent, err := f.newAgent(stderr)
	if err != nil {
		return err
	}
	defer f.close()
	defer agent.Close()
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelDebug
	}
	opts := mcpserver.Options{Name: m.name, Description: m.description,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))}
	if typed.schema != nil {
		opts.OutputSchema, opts.AnswerMode, opts.MaxRepairs = typed.schema, typed.mode, typed.repairs
		if typed.repairs == 0 {
			opts.MaxRepairs = -1 // none: Options' 0 is the default
		}
	}
	srv, err := mcpserver.New(agent, opts)
	if err != nil {
		return err
	}
	if !m.http {
		fmt.Fprintf(stderr, "robby: serving %s (%d tools) as MCP tool %s on stdio → %s\n", f.model, len(agent.Tools()), mcpserver.ToolName, f.baseURL)
		t := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
		err := srv.Run(ctx, t)
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	var h http.Handler = srv
	if len(tokens) > 0 {
		h = auth.RequireBearerToken(tokens.verifier(), &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ln, err := listen(m.addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "robby: serving %s (%d tools) as MCP tool %s on http://%s/mcp → %s\n",
		f.model, len(agent.Tools()), mcpserver.ToolName, ln.Addr(), f.baseURL)
	warnOpen(stderr, m.addr, len(tokens) > 0)
	return serveHTTP(ctx, ln, mux, httpFlags{drain: defaultDrain}, stderr)
}

// nopWriteCloser is stdout for the stdio transport, which closes its
// writer when the session ends: the process's stdout stays open.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
