package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/robby-go/robby/mcpserver"
)

// defaultMCPAddr is where `robby mcp -http` listens unless told otherwise:
// loopback only, next to serve's port.
const defaultMCPAddr = "127.0.0.1:8090"

func mcpCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := newCommand("mcp", "robby mcp [flags]",
		"Serves the agent as the MCP tool "+mcpserver.ToolName+", over stdio, or with -http over streamable HTTP at /mcp.\n"+
			"With -http it listens on "+defaultMCPAddr+"; on any other address it needs a bearer token\n"+
			"(-token or ROBBY_TOKEN), or -insecure-no-token. With -schema FILE, "+mcpserver.ToolName+" declares the schema as its\n"+
			"output schema and answers with JSON that fits it, as structured content.",
		tokenEnv, agentEnv)
	fs := cmd.fs
	var f agentFlags
	var sf schemaFlags
	f.register(fs)
	sf.register(fs, "a JSON Schema file (of an object): the ask tool's output schema; each answer is JSON validated against it, returned as structured content")
	useHTTP := fs.Bool("http", false, "serve streamable HTTP on -addr instead of stdio")
	addr := fs.String("addr", defaultMCPAddr, "address to listen on with -http")
	token := fs.String("token", os.Getenv("ROBBY_TOKEN"), "bearer token HTTP clients must send (env ROBBY_TOKEN)")
	insecure := fs.Bool("insecure-no-token", false, "allow -http off loopback without a token")
	name := fs.String("name", "robby", "the server's name, as hosts show it")
	desc := fs.String("description", mcpserver.DefaultDescription, "the ask tool's description, which the host's model reads")
	if err := cmd.parse(args, stdout, stderr); err != nil {
		return err
	}
	if *useHTTP {
		if err := needToken(*addr, *token != "", *insecure); err != nil {
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
	opts := &mcpserver.Options{Name: *name, Description: *desc,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))}
	if typed.schema != nil {
		opts.OutputSchema, opts.AnswerMode, opts.MaxRepairs = typed.schema, typed.mode, typed.repairs
		if typed.repairs == 0 {
			opts.MaxRepairs = -1 // none: Options' 0 is the default
		}
	}
	if *useHTTP {
		opts.Token = *token
	}
	srv, err := mcpserver.New(agent, opts)
	if err != nil {
		return err
	}
	if !*useHTTP {
		fmt.Fprintf(stderr, "robby: serving %s (%d tools) as MCP tool %s on stdio → %s\n", f.model, len(agent.Tools()), mcpserver.ToolName, f.baseURL)
		t := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
		err := srv.Run(ctx, t)
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "robby: serving %s (%d tools) as MCP tool %s on http://%s/mcp → %s\n",
		f.model, len(agent.Tools()), mcpserver.ToolName, ln.Addr(), f.baseURL)
	warnOpen(stderr, *addr, *token != "")
	return serveHTTP(ctx, ln, mux, stderr)
}

// nopWriteCloser is stdout for the stdio transport, which closes its
// writer when the session ends: the process's stdout stays open.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
