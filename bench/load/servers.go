package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A local is an HTTP server of the load tool's on 127.0.0.1.
type local struct {
	URL string
	srv *http.Server
}

func serveLocal(h http.Handler) (*local, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &local{URL: "http://" + ln.Addr().String(), srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go l.srv.Serve(ln)
	return l, nil
}

// closeIdle closes the server's idle connections, so that its clients'
// goroutines that wait on them end.
func (l *local) closeIdle() {
	l.srv.SetKeepAlivesEnabled(false)
	l.srv.SetKeepAlivesEnabled(true)
}

func (l *local) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.srv.Shutdown(ctx); err != nil {
		return errors.Join(err, l.srv.Close())
	}
	return nil
}

// lookupServer is the MCP server of the tool robby calls: lookup returns what
// the model expects for a turn's key.
func lookupServer() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "load", Version: "v1"}, nil)
	// Read-only, as a lookup is: robby may run it before its call is stored.
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Look a key up", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Key string `json:"key" jsonschema:"the key to look up"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: lookupResult(in.Key)}}}, nil, nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}

// floorProxy is the floor: a plain reverse proxy to the model, which adds
// what any HTTP hop adds and nothing else.
func floorProxy(modelURL string) (http.Handler, error) {
	u, err := url.Parse(modelURL)
	if err != nil {
		return nil, err
	}
	p := httputil.NewSingleHostReverseProxy(u)
	p.FlushInterval = -1 // each event as it comes
	return p, nil
}
