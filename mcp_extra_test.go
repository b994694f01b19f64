package robby

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// elicitSchema is a form with defaults, as in the conformance suite's
// elicitation-sep1034-client-defaults scenario.
const elicitSchema = `{"type":"object","properties":{
	"name":{"type":"string","default":"John Doe"},
	"age":{"type":"integer","default":30},
	"verified":{"type":"boolean","default":true}
}}`

// newElicitingServer is a go-sdk server whose "signup" tool asks the client
// for a form and returns the answer as JSON. The form is a multi
// round-trip request; the go-sdk turns it into an elicitation/create
// request for clients of earlier protocols. Its "capability" tool returns
// the elicitation capability the client advertised.
func newElicitingServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "eliciting", Version: "v0"}, nil)
	s.AddTool(&mcp.Tool{Name: "signup", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if res, ok := req.Params.InputResponses["who"].(*mcp.ElicitResult); ok {
				b, err := json.Marshal(res)
				if err != nil {
					return nil, err
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"who": &mcp.ElicitParams{Message: "Who are you?", RequestedSchema: json.RawMessage(elicitSchema)},
			}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "capability", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			b, err := json.Marshal(req.Session.InitializeParams().Capabilities.Elicitation)
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		})
	return s
}

// connectElicitingServer runs newElicitingServer in memory and returns the
// MCPServer that reaches it.
func connectElicitingServer(t *testing.T) MCPServer {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := newElicitingServer().Connect(t.Context(), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	return MCPTransport("eliciting", ct)
}

func callOne(t *testing.T, a *Agent, name string) ToolResult {
	t.Helper()
	results, err := a.ExecuteToolCalls(t.Context(), []ToolCall{{ID: "1", Name: name, Arguments: `{}`}})
	require.NoError(t, err)
	require.Len(t, results, 1)
	return results[0]
}

func TestMCPElicitationHandlerAnswersTheServer(t *testing.T) {
	var asked []string
	server := connectElicitingServer(t).WithElicitation(func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	})
	a, err := New(WithModel("m"), WithMCP(server))
	require.NoError(t, err)
	defer a.Close()

	capability := callOne(t, a, "capability")
	require.NoError(t, capability.Err)
	assert.JSONEq(t, `{"form":{}}`, capability.Output, "elicitation is advertised")

	signup := callOne(t, a, "signup")
	require.NoError(t, signup.Err)
	assert.Equal(t, []string{"Who are you?"}, asked)
	// What the handler filled in is kept; the schema's defaults fill the rest.
	assert.JSONEq(t, `{"action":"accept","content":{"name":"Ada","age":30,"verified":true}}`, signup.Output)
}

func TestMCPElicitationDeclineAndHandlerError(t *testing.T) {
	decline := true
	server := connectElicitingServer(t).WithElicitation(func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if decline {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return nil, errors.New("no user at the keyboard")
	})
	a, err := New(WithModel("m"), WithMCP(server))
	require.NoError(t, err)
	defer a.Close()

	declined := callOne(t, a, "signup")
	require.NoError(t, declined.Err)
	assert.JSONEq(t, `{"action":"decline"}`, declined.Output)

	decline = false
	failed := callOne(t, a, "signup")
	require.Error(t, failed.Err, "the handler's error fails the server's tool, which the model reads")
	assert.Contains(t, failed.Output, "no user at the keyboard")
}

func TestMCPNoElicitationByDefault(t *testing.T) {
	a, err := New(WithModel("m"), WithMCP(connectElicitingServer(t)))
	require.NoError(t, err)
	defer a.Close()

	capability := callOne(t, a, "capability")
	require.NoError(t, capability.Err)
	assert.Equal(t, "null", capability.Output, "elicitation is not advertised")

	signup := callOne(t, a, "signup")
	require.Error(t, signup.Err, "the server cannot ask the user")
}

func TestMCPWithElicitationIsACopy(t *testing.T) {
	base := MCPStreamableHTTP("s", "http://localhost:1/mcp")
	with := base.WithElicitation(func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "cancel"}, nil
	})
	assert.Nil(t, base.elicit)
	assert.NotNil(t, with.elicit)
	assert.Nil(t, (&mcpConn{spec: base}).clientOptions().ElicitationHandler)
	assert.NotNil(t, (&mcpConn{spec: with}).clientOptions().ElicitationHandler)
}

// TestMCPToolListRefreshIsBounded: a server announces a new tool list and
// then does not answer tools/list. That must not hang Agent.Tools, whose
// refresh has no context deadline of its own. Its previous tools are kept.
func TestMCPToolListRefreshIsBounded(t *testing.T) {
	var stall atomic.Bool
	release := make(chan struct{})
	s := mcp.NewServer(&mcp.Implementation{Name: "stall", Version: "v0"}, nil)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" && stall.Load() {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return next(ctx, method, req)
		}
	})
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	s.AddTool(&mcp.Tool{Name: "grow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			stall.Store(true)
			s.AddTool(&mcp.Tool{Name: "new", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
			return &mcp.CallToolResult{}, nil
		})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(t.Context(), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	a, err := New(WithModel("m"), WithMCP(MCPTransport("stall", ct).WithConnectTimeout(200*time.Millisecond)))
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	t.Cleanup(func() { close(release) }) // first: unblocks the server if the test fails

	require.NoError(t, callOne(t, a, "grow").Err)
	time.Sleep(50 * time.Millisecond) // for notifications/tools/list_changed

	done := make(chan []Tool, 1)
	go func() { done <- a.Tools() }()
	select {
	case tools := <-done:
		require.Len(t, tools, 1)
		assert.Equal(t, "grow", tools[0].Name())
	case <-time.After(5 * time.Second):
		t.Fatal("Agent.Tools still waits after 5 s on a server that does not answer tools/list")
	}
}
