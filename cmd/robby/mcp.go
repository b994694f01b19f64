package main

import (
	"context"
	"flag"
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
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f agentFlags
	f.register(fs)
	useHTTP := fs.Bool("http", false, "serve streamable HTTP on -addr instead of stdio")
	addr := fs.String("addr", defaultMCPAddr, "address to listen on with -http")
	token := fs.String("token", os.Getenv("ROBBY_TOKEN"), "bearer token HTTP clients must send (env ROBBY_TOKEN)")
	open := fs.Bool("insecure-no-token", false, "allow -http off loopback without a token")
	name := fs.String("name", "robby", "the server's name, as hosts show it")
	desc := fs.String("description", mcpserver.DefaultDescription, "the ask tool's description, which the host's model reads")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: robby mcp [flags]    serve the agent as the MCP tool ask, over stdio or (-http) streamable HTTP")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *useHTTP && *token == "" && !*open && !isLoopback(*addr) {
		return fmt.Errorf("-addr %s is reachable from other machines: set a token with -token or ROBBY_TOKEN "+
			"(ROBBY_TOKEN keeps it out of ps), or pass -insecure-no-token to serve without one", *addr)
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
	if !*useHTTP {
		fmt.Fprintf(stderr, "robby: serving %s (%d tools) as MCP tool %s on stdio → %s\n", f.model, len(agent.Tools()), mcpserver.ToolName, f.baseURL)
		t := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
		err := mcpserver.New(agent, opts).Run(ctx, t)
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	opts.Token = *token
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpserver.New(agent, opts))
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "robby: serving %s (%d tools) as MCP tool %s on http://%s/mcp → %s\n",
		f.model, len(agent.Tools()), mcpserver.ToolName, ln.Addr(), f.baseURL)
	return serveHTTP(ctx, ln, mux, stderr)
}

// isLoopback reports whether addr ("host:port") listens on loopback only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// nopWriteCloser is stdout for the stdio transport, which closes its
// writer when the session ends: the process's stdout stays open.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
