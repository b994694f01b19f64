package robby

//lint:file-ignore SA1019 the test server logs as servers of protocols before 2026-07-28 do.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/internal/mcpwire"
	"github.com/robby-go/robby/robbytest"
)

type mcpAddIn struct {
	A int `json:"a" jsonschema:"first addend"`
	B int `json:"b" jsonschema:"second addend"`
}

type mcpAddOut struct {
	Sum int `json:"sum"`
}

// greetSchema uses what robby must keep whole: $defs, $ref, enum, nested
// objects, required and descriptions.
const greetSchema = `{
	"type": "object",
	"$defs": {"person": {"type": "object", "properties": {
		"name": {"type": "string", "description": "the name"},
		"title": {"type": "string", "enum": ["Dr", "Ms", "Mr"]}
	}, "required": ["name"]}},
	"properties": {"who": {"$ref": "#/$defs/person", "description": "who to greet"}},
	"required": ["who"]
}`

// newMCPTestServer is a real go-sdk server with tools covering the result
// shapes robby renders.
func newMCPTestServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two numbers"},
		func(_ context.Context, _ *mcp.CallToolRequest, in mcpAddIn) (*mcp.CallToolResult, mcpAddOut, error) {
			return nil, mcpAddOut{Sum: in.A + in.B}, nil
		})
	s.AddTool(&mcp.Tool{Name: "greet", Description: "Greets someone", InputSchema: json.RawMessage(greetSchema)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Who struct{ Name, Title string } }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hello"}, &mcp.TextContent{Text: in.Who.Title + " " + in.Who.Name}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "fail", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the archive is locked"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "media", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			size := int64(3)
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte{1, 2, 3, 4}},
				&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte{1, 2}},
				&mcp.ResourceLink{URI: "file:///tmp/a.txt", Name: "a.txt", Description: "a file", Size: &size},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///tmp/b.txt", MIMEType: "text/plain", Text: "inside b"}},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///tmp/c.bin", MIMEType: "application/octet-stream", Blob: []byte{9, 9}}},
			}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "burst", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i := 1; i <= burstNotices; i++ {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: burstNotices})
				req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: fmt.Sprint(i)})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "burst done"}}}, nil // at once
		})
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if token := req.Params.GetProgressToken(); token != nil {
				for i := 1; i <= 2; i++ {
					req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: 2, Message: "step"})
				}
				req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "slow", Data: "halfway"})
				// A slow tool: its result comes well after its notices.
				time.Sleep(50 * time.Millisecond)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slow done"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "hang", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	return s
}

// inMemory connects server to a new in-memory MCPServer named name.
func inMemory(t testing.TB, name string, server *mcp.Server) MCPServer {
	t.Helper()
	return MCPTransport(name, memoryTransport(t, server))
}

// memoryTransport connects server, for the test, to the client's end of
// in-memory transports, which it returns.
func memoryTransport(t testing.TB, server *mcp.Server) mcp.Transport {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	return ct
}

// streamableURL serves a server from newServer over streamable HTTP, for
// the test, and returns its URL.
func streamableURL(t testing.TB, newServer func() *mcp.Server) string {
	t.Helper()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newServer() }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

func toolNames(a *Agent) []string {
	var names []string
	for _, t := range a.Tools() {
		names = append(names, t.Name())
	}
	return names
}

func TestMCPToolsInTheLoop(t *testing.T) {
	srv := newServer(t)
	srv.Reply(
		robbytest.ToolCalls(
			robbytest.Call("add", `{"a":40,"b":2}`),
			robbytest.Call("greet", `{"who":{"name":"Curie","title":"Dr"}}`),
			robbytest.Call("fail", `{}`),
			robbytest.Call("media", `{}`),
		),
		robbytest.Text("done"),
	)
	a := newTestAgent(t, srv, WithMCP(inMemory(t, "test", newMCPTestServer())))
	assert.Equal(t, []string{"add", "burst", "fail", "greet", "hang", "media", "slow"}, toolNames(a), "one server: bare names")

	res, err := a.Run(t.Context(), "go")
	require.NoError(t, err)
	assert.Equal(t, "done", res.Text)
	tools := map[string]string{}
	for _, m := range srv.Requests()[1].Messages {
		if m.Role == "tool" {
			tools[m.ToolCallID] = m.Content
		}
	}
	assert.Equal(t, `{"sum":42}`, tools["call_0_add"], "structured content is sent as JSON")
	assert.Equal(t, "Hello\nDr Curie", tools["call_1_greet"])
	assert.Equal(t, `Error: tool "fail": the archive is locked`, tools["call_2_fail"], "isError reaches the model")
	media := strings.SplitN(tools["call_3_media"], "\n", 4)
	require.Len(t, media, 4)
	assert.Equal(t, []string{"[image: image/png, 4 bytes]", "[audio: audio/wav, 2 bytes]", "[resource link file:///tmp/a.txt: a.txt: a file]"}, media[:3])
	embedded, binary, ok := strings.Cut(media[3], ">\n[resource file:///tmp/c.bin")
	require.True(t, ok, media[3])
	uri, text := unfence(t, embedded+">")
	assert.Equal(t, []string{"file:///tmp/b.txt", "inside b"}, []string{uri, text}, "an embedded resource is fenced")
	assert.Equal(t, ": application/octet-stream, 2 bytes]", binary)
}

func TestMCPSchemasAreKeptWhole(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.Text("ok"))
	a := newTestAgent(t, srv, WithMCP(inMemory(t, "test", newMCPTestServer())))
	_, err := a.Run(t.Context(), "hi")
	require.NoError(t, err)
	var body struct {
		Tools []struct {
			Function struct {
				Name       string
				Parameters json.RawMessage
			}
		}
	}
	require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &body))
	var sent string
	for _, tool := range body.Tools {
		if tool.Function.Name == "greet" {
			sent = string(tool.Function.Parameters)
		}
	}
	assert.JSONEq(t, greetSchema, sent)
}

func TestMCPArgumentsAreValidatedBeforeTheCall(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv, WithMCP(inMemory(t, "test", newMCPTestServer())))
	results, err := a.ExecuteToolCalls(t.Context(), []ToolCall{
		{ID: "1", Name: "greet", Arguments: `{"who":{"title":"Dr"}}`},
		{ID: "2", Name: "greet", Arguments: `{"who":{"name":"Ada","title":"Lady"}}`},
	})
	require.NoError(t, err)
	for _, r := range results {
		assert.ErrorIs(t, r.Err, ErrInvalidArguments)
	}
	assert.Contains(t, results[0].Output, "name")
	assert.Contains(t, results[1].Output, "enum")
}

// remoteMCP serves server over streamable HTTP, SSE or WebSocket, and
// records the Authorization headers it receives.
func remoteMCP(t *testing.T, kind string, server *mcp.Server) (MCPServer, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var auth []string
	record := func(r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		auth = append(auth, r.Header.Get("Authorization"))
	}
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), auth...)
	}
	get := func(*http.Request) *mcp.Server { return server }
	var s MCPServer
	switch kind {
	case "http":
		h := mcp.NewStreamableHTTPHandler(get, nil)
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { record(r); h.ServeHTTP(w, r) }))
		t.Cleanup(hs.Close)
		s = MCPStreamableHTTP("remote", hs.URL)
	case "sse":
		h := mcp.NewSSEHandler(get, nil)
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { record(r); h.ServeHTTP(w, r) }))
		t.Cleanup(hs.Close)
		s = MCPSSE("remote", hs.URL)
	case "websocket":
		var handlers sync.WaitGroup // hijacked handlers, which httptest does not wait for
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			handlers.Add(1)
			defer handlers.Done()
			record(r)
			c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"mcp"}})
			if err != nil {
				t.Errorf("accept: %v", err)
				return
			}
			conn := mcpwire.NewWebSocketConn(c)
			defer conn.Close()
			if ss, err := server.Connect(r.Context(), wsConnTransport{conn}, nil); err == nil {
				_ = ss.Wait()
			}
		}))
		t.Cleanup(func() { hs.Close(); handlers.Wait() })
		s = MCPWebSocket("remote", "ws"+strings.TrimPrefix(hs.URL, "http"))
	}
	return s.WithHeader("Authorization", "Bearer secret"), seen
}

func TestMCPRemoteTransports(t *testing.T) {
	for _, kind := range []string{"http", "sse", "websocket"} {
		t.Run(kind, func(t *testing.T) {
			spec, auth := remoteMCP(t, kind, newMCPTestServer())
			srv := newServer(t)
			a := newTestAgent(t, srv, WithMCP(spec))
			assert.Contains(t, toolNames(a), "add")
			results, err := a.ExecuteToolCalls(t.Context(), []ToolCall{{ID: "1", Name: "add", Arguments: `{"a":1,"b":2}`}})
			require.NoError(t, err)
			assert.Equal(t, `{"sum":3}`, results[0].Output)
			require.NotEmpty(t, auth())
			for _, h := range auth() {
				assert.Equal(t, "Bearer secret", h)
			}
			require.NoError(t, a.Close())
		})
	}
}

func TestMCPToolNames(t *testing.T) {
	longName := strings.Repeat("very.long.tool.name/", 5)
	server := func(names ...string) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "n", Version: "v0"}, nil)
		for _, n := range names {
			s.AddTool(&mcp.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "I am " + n}}}, nil
				})
		}
		return s
	}
	local := FuncTool("lookup", "", nil, func(context.Context, map[string]any) (any, error) { return "local", nil })

	t.Run("several servers are prefixed", func(t *testing.T) {
		a := newTestAgent(t, newServer(t), WithMCP(inMemory(t, "one", server("lookup", "x.y")), inMemory(t, "two", server("lookup"))))
		assert.Equal(t, []string{"one__lookup", "one__x_y", "two__lookup"}, toolNames(a))
		results, err := a.ExecuteToolCalls(t.Context(), []ToolCall{{ID: "1", Name: "one__x_y", Arguments: "{}"}, {ID: "2", Name: "two__lookup", Arguments: "{}"}})
		require.NoError(t, err)
		assert.Equal(t, "I am x.y", results[0].Output, "the name maps back exactly")
		assert.Equal(t, "I am lookup", results[1].Output)
	})
	t.Run("a clash with a local tool", func(t *testing.T) {
		a := newTestAgent(t, newServer(t), WithTools(local), WithMCP(inMemory(t, "srv", server("lookup", "other"))))
		assert.Equal(t, []string{"lookup", "other", "srv__lookup"}, toolNames(a))
		results, err := a.ExecuteToolCalls(t.Context(), []ToolCall{{ID: "1", Name: "lookup", Arguments: "{}"}, {ID: "2", Name: "srv__lookup", Arguments: "{}"}})
		require.NoError(t, err)
		assert.Equal(t, []string{"local", "I am lookup"}, []string{results[0].Output, results[1].Output})
	})
	t.Run("long and odd names", func(t *testing.T) {
		a := newTestAgent(t, newServer(t), WithMCP(inMemory(t, "s", server(longName, longName+"2"))))
		names := toolNames(a)
		require.Len(t, names, 2)
		for _, n := range names {
			assert.True(t, validName(n), n)
		}
		assert.NotEqual(t, names[0], names[1])
		results, err := a.ExecuteToolCalls(t.Context(), []ToolCall{{ID: "1", Name: names[0], Arguments: "{}"}, {ID: "2", Name: names[1], Arguments: "{}"}})
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{"I am " + longName, "I am " + longName + "2"}, []string{results[0].Output, results[1].Output})
	})
	t.Run("filters", func(t *testing.T) {
		a := newTestAgent(t, newServer(t),
			WithMCP(inMemory(t, "one", server("a", "b", "c")).WithDeny("b"), inMemory(t, "two", server("a", "b")).WithAllow("b")))
		assert.Equal(t, []string{"one__a", "one__c", "two__b"}, toolNames(a))
		a = newTestAgent(t, newServer(t), WithMCP(inMemory(t, "one", server("a", "b")), inMemory(t, "two", server("a"))), WithMCPTools("b", "two__a"))
		assert.Equal(t, []string{"one__b", "two__a"}, toolNames(a))
		results, err := a.ExecuteToolCalls(t.Context(), []ToolCall{{ID: "1", Name: "one__a", Arguments: "{}"}})
		require.NoError(t, err)
		assert.ErrorIs(t, results[0].Err, ErrUnknownTool, "a filtered tool is not callable")
	})
}

func TestMCPToolListChangesBetweenTurns(t *testing.T) {
	server := newMCPTestServer()
	var hub *mcpHub
	install := FuncTool("install", "", nil, func(context.Context, map[string]any) (any, error) {
		server.AddTool(&mcp.Tool{Name: "fresh", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fresh result"}}}, nil
			})
		// The server tells its clients after a short debounce.
		for !hub.changed.Load() {
			time.Sleep(time.Millisecond)
		}
		return "installed", nil
	})
	srv := newServer(t)
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("install", `{}`)),
		robbytest.ToolCalls(robbytest.Call("live__fresh", `{}`)),
		robbytest.Text("done"),
	)
	a := newTestAgent(t, srv, WithTools(install), WithMCP(inMemory(t, "test", newMCPTestServer()), inMemory(t, "live", server)))
	hub = a.core.tools.hub
	assert.NotContains(t, toolNames(a), "live__fresh")

	res, err := a.Run(t.Context(), "go")
	require.NoError(t, err)
	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	assert.NotContains(t, reqs[0].Tools, "live__fresh")
	assert.Contains(t, reqs[1].Tools, "live__fresh", "the new tool is offered on the next turn")
	assert.Equal(t, "fresh result", res.ToolCalls[1].Output)
}

type failingTransport struct{}

func (failingTransport) Connect(context.Context) (mcp.Connection, error) {
	return nil, errors.New("no route to the moon")
}

func TestMCPConnectFailures(t *testing.T) {
	srv := newServer(t)
	_, err := New(WithBaseURL(srv.URL), WithModel("m"),
		WithMCP(MCPTransport("moon", failingTransport{}), inMemory(t, "ok", newMCPTestServer())))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `MCP server "moon"`)
	assert.Contains(t, err.Error(), "no route to the moon")

	var logs bytes.Buffer
	a := newTestAgent(t, srv, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		WithMCP(MCPTransport("moon", failingTransport{}).WithOptional(), inMemory(t, "ok", newMCPTestServer())))
	assert.Contains(t, toolNames(a), "ok__add")
	assert.Contains(t, logs.String(), "optional MCP server left out")

	_, err = New(WithModel("m"), WithMCP(MCPCommand("missing", "/nonexistent/mcp-server")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `MCP server "missing"`)

	_, err = New(WithModel("m"), WithMCP(MCPCommand("a", "x"), MCPCommand("a", "y")))
	assert.ErrorContains(t, err, "duplicate")
	_, err = New(WithModel("m"), WithMCP(MCPStreamableHTTP("u", "")))
	assert.ErrorContains(t, err, "no URL")
}

func TestMCPHangingToolIsBounded(t *testing.T) {
	a := newTestAgent(t, newServer(t), WithMCP(inMemory(t, "test", newMCPTestServer())), WithToolTimeout(100*time.Millisecond))
	start := time.Now()
	results, err := a.ExecuteToolCalls(t.Context(), []ToolCall{{ID: "1", Name: "hang", Arguments: "{}"}})
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.ErrorIs(t, results[0].Err, context.DeadlineExceeded)
	// The session survives: the next call works.
	results, err = a.ExecuteToolCalls(t.Context(), []ToolCall{{ID: "2", Name: "add", Arguments: `{"a":1,"b":1}`}})
	require.NoError(t, err)
	assert.Equal(t, `{"sum":2}`, results[0].Output)
}

func TestMCPOversizedArgumentsAreRefused(t *testing.T) {
	spec, _ := remoteMCP(t, "http", newMCPTestServer())
	a := newTestAgent(t, newServer(t), WithMCP(spec))
	big := `{"who":{"name":"` + strings.Repeat("x", maxHTTPMessage) + `"}}`
	results, err := a.ExecuteToolCalls(t.Context(), []ToolCall{{ID: "1", Name: "greet", Arguments: big}})
	require.NoError(t, err)
	assert.Contains(t, results[0].Output, "more than MCP server \"remote\" accepts in one message")
	results, err = a.ExecuteToolCalls(t.Context(), []ToolCall{{ID: "2", Name: "add", Arguments: `{"a":1,"b":1}`}})
	require.NoError(t, err)
	assert.Equal(t, `{"sum":2}`, results[0].Output, "the session is still up")
}

func TestPortableSchemasLeaveOutUnusableTools(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "n", Version: "v0"}, nil)
	s.AddTool(&mcp.Tool{Name: "tree", InputSchema: json.RawMessage(`{"type":"object","$defs":{"n":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/n"}}}}},"properties":{"root":{"$ref":"#/$defs/n"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add"}, func(_ context.Context, _ *mcp.CallToolRequest, in mcpAddIn) (*mcp.CallToolResult, mcpAddOut, error) {
		return nil, mcpAddOut{Sum: in.A + in.B}, nil
	})
	var logs bytes.Buffer
	a := newTestAgent(t, newServer(t), WithPortableSchemas(), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		WithMCP(inMemory(t, "n", s)))
	assert.Equal(t, []string{"add"}, toolNames(a))
	assert.Contains(t, logs.String(), "MCP tool left out")
	assert.Contains(t, logs.String(), "tree")
	assert.NotContains(t, a.Tools()[0].Parameters(), "additionalProperties")
}

func TestTailBufferKeepsTheLastLines(t *testing.T) {
	var b tailBuffer
	for i := range 30 {
		b.Write([]byte("line " + strings.Repeat("x", i%3) + "\n"))
	}
	b.Write([]byte("partial"))
	lines := strings.Split(b.String(), "\n")
	assert.Len(t, lines, tailLines+1)
	assert.Equal(t, "partial", lines[len(lines)-1])
}

// sameNameServer is a server with n tools whose names all become the same
// once made to fit the model's rules ("t" and three accented letters).
func sameNameServer(n int) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "n", Version: "v0"}, nil)
	letters := []rune("àáâãäåæçèéêëìíîïðñòóôõöøùúûüý")
	for i := range n {
		name := "t" + string([]rune{letters[i%len(letters)], letters[i/len(letters)%len(letters)], letters[i/len(letters)/len(letters)%len(letters)]})
		s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "I am " + name}}}, nil
			})
	}
	return s
}

// TestMCPSameNameToolsRenamedInLinearTime loads 10,000 tools of one name
// and renames them again after a list_changed. This took 42 s when each
// clash tried _2, _3, … from the start.
func TestMCPSameNameToolsRenamedInLinearTime(t *testing.T) {
	const n = 10_000
	server := sameNameServer(n)
	mcpServer := inMemory(t, "s", server)
	start := time.Now()
	a := newTestAgent(t, newServer(t), WithMCP(mcpServer))
	loaded := time.Since(start)
	names := toolNames(a)
	require.Len(t, names, n)
	seen := make(map[string]bool, n)
	for _, name := range names {
		require.False(t, seen[name], "%s given twice", name)
		require.True(t, validName(name), name)
		seen[name] = true
	}
	assert.True(t, seen["t______"], "the first keeps its name")
	assert.True(t, seen["s__t______"], "the second gets the server's prefix")
	assert.True(t, seen[fmt.Sprintf("s__t_______%d", n-1)], "the last gets the last number")
	hub := a.core.tools.hub
	start = time.Now()
	require.Len(t, hub.tools(), n)
	renamed := time.Since(start)
	t.Logf("loaded in %v, renamed again in %v", loaded, renamed)
	// Loading takes under a second without the race detector
	// (BenchmarkMCPSameNameTools), most of it the SDK's listing. The
	// renaming took 42 s alone; the bound leaves room for the race
	// detector and a loaded machine.
	assert.Less(t, renamed, 20*time.Second, "renaming 10,000 tools of one name")
}

// BenchmarkMCPSameNameTools loads 10,000 tools of one name, next to a
// baseline listing the same tools with the go-sdk alone.
func BenchmarkMCPSameNameTools(b *testing.B) {
	const n = 10_000
	server := sameNameServer(n)
	srv := robbytest.NewServer()
	defer srv.Close()
	b.Run("robby", func(b *testing.B) {
		for b.Loop() {
			a, err := New(WithBaseURL(srv.URL), WithModel("m"), WithAPIKey(""), WithMCP(inMemory(b, "s", server)))
			if err != nil {
				b.Fatal(err)
			}
			if len(a.Tools()) != n {
				b.Fatalf("%d tools", len(a.Tools()))
			}
			a.Close()
		}
	})
	b.Run("go-sdk", func(b *testing.B) {
		for b.Loop() {
			ct, st := mcp.NewInMemoryTransports()
			ss, err := server.Connect(b.Context(), st, nil)
			if err != nil {
				b.Fatal(err)
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(b.Context(), ct, nil)
			if err != nil {
				b.Fatal(err)
			}
			count := 0
			for _, err := range cs.Tools(b.Context(), nil) {
				if err != nil {
					b.Fatal(err)
				}
				count++
			}
			if count != n {
				b.Fatalf("%d tools", count)
			}
			cs.Close()
			ss.Close()
		}
	})
}

// wsConnTransport lets an mcp.Server use an already accepted connection.
type wsConnTransport struct{ conn mcp.Connection }

func (t wsConnTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }

// TestMCPHeadersStayWithTheirServer: an MCP server over streamable HTTP
// redirects to another host (port). The server gets its headers; the other
// host gets none of them, though the session works through it.
func TestMCPHeadersStayWithTheirServer(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newMCPTestServer() }, nil)
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		for _, k := range []string{"Authorization", "X-Api-Key"} {
			if v := r.Header.Get(k); v != "" {
				leaked = append(leaked, k+": "+v)
			}
		}
		mu.Unlock()
		mcpHandler.ServeHTTP(w, r)
	}))
	defer back.Close()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, back.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer front.Close()
	srv := newServer(t)
	a := newTestAgent(t, srv, WithMCP(MCPStreamableHTTP("s", front.URL).
		WithHeader("Authorization", "Bearer mcp-secret-0123456789").WithHeader("X-Api-Key", "mcp-key-0123456789")))
	assert.Contains(t, toolNames(a), "add", "the session works through the redirect")
	require.NoError(t, a.Close())
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, leaked, "the other host got the server's headers")
}
