package robby

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// A misuse is an error that names it, where it happens, never a panic
// deeper down.

func TestNewRefusesNilOptions(t *testing.T) {
	_, err := New(nil)
	require.ErrorContains(t, err, "option 1 of 1 is nil")
	_, err = New(WithModel("m"), nil)
	require.ErrorContains(t, err, "option 2 of 2 is nil")

	srv := newServer(t)
	a := newTestAgent(t, srv)
	res, err := a.Run(t.Context(), "hi", nil)
	require.ErrorContains(t, err, "run option 1 of 1 is nil")
	assert.NotNil(t, res)
	assert.Empty(t, srv.Requests())
}

func TestWithBaseURLRefusesWhatIsNotAnHTTPURL(t *testing.T) {
	for _, bad := range []string{"127.0.0.1:8080/v1", "localhost:11434/v1", "/v1", "ftp://example.com/v1", "http:///v1", "http//localhost/v1", "%zz"} {
		_, err := New(WithModel("m"), WithBaseURL(bad))
		if assert.Error(t, err, bad) {
			assert.Contains(t, err.Error(), "WithBaseURL: \""+bad+"\"", "the message quotes the value")
		}
	}
	for _, good := range []string{"http://127.0.0.1:8080/v1", "https://api.openai.com/v1", "HTTP://localhost:11434/v1"} {
		_, err := New(WithModel("m"), WithBaseURL(good))
		assert.NoError(t, err, good)
	}
}

func TestNilContextIsAnError(t *testing.T) {
	srv := newServer(t)
	a := newTestAgent(t, srv)
	var nilCtx context.Context // what a caller passes by mistake
	_, err := a.Run(nilCtx, "hi")
	assert.ErrorIs(t, err, ErrNilContext, "Run")
	_, err = a.Resume(nilCtx)
	assert.ErrorIs(t, err, ErrNilContext, "Resume")
	for name, seq := range map[string]func(yield func(Event, error) bool){
		"Stream": a.Stream(nilCtx, "hi"), "ResumeStream": a.ResumeStream(nilCtx),
	} {
		var last Event
		var lastErr error
		for ev, err := range seq {
			last, lastErr = ev, err
		}
		assert.Equal(t, EventDone, last.Kind, name)
		assert.NotNil(t, last.Result, name)
		assert.ErrorIs(t, lastErr, ErrNilContext, name)
	}
	_, err = a.ChatCompletion(nilCtx)
	assert.ErrorIs(t, err, ErrNilContext, "ChatCompletion")
	_, err = a.ChatCompletionStream(nilCtx, func(string) error { return nil })
	assert.ErrorIs(t, err, ErrNilContext, "ChatCompletionStream")
	_, err = a.ToolsCompletion(nilCtx)
	assert.ErrorIs(t, err, ErrNilContext, "ToolsCompletion")
	_, err = a.ExecuteToolCalls(nilCtx, []ToolCall{{ID: "1", Name: "add", Arguments: "{}"}})
	assert.ErrorIs(t, err, ErrNilContext, "ExecuteToolCalls")
	_, res, err := RunTyped[struct{ A int }](nilCtx, a, "hi")
	assert.ErrorIs(t, err, ErrNilContext, "RunTyped")
	assert.NotNil(t, res, "RunTyped")
	for ev, err := range StreamTyped[struct{ A int }](nilCtx, a, "hi") {
		assert.Equal(t, EventDone, ev.Kind, "StreamTyped")
		assert.ErrorIs(t, err, ErrNilContext, "StreamTyped")
	}
	assert.Empty(t, srv.Requests())
	assert.ErrorContains(t, ErrNilContext, "nil context")
}

// TestNilContextIsAnErrorForMCP calls each MCP building block of an agent
// with a live server with a nil context: an error, not a panic in the SDK.
func TestNilContextIsAnErrorForMCP(t *testing.T) {
	server := newResourceServer(1, nil)
	server.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	a := newTestAgent(t, newServer(t), WithMCP(inMemory(t, "res", server)))
	var nilCtx context.Context
	for name, call := range map[string]func() error{
		"MCPResources":         func() error { _, err := a.MCPResources(nilCtx); return err },
		"ReadMCPResource":      func() error { _, err := a.ReadMCPResource(nilCtx, "res", "mem://0"); return err },
		"AttachMCPResource":    func() error { return a.AttachMCPResource(nilCtx, "res", "mem://0") },
		"SubscribeMCPResource": func() error { return a.SubscribeMCPResource(nilCtx, "res", "mem://0", func(string) {}) },
		"MCPPrompts":           func() error { _, err := a.MCPPrompts(nilCtx); return err },
		"MCPPrompt":            func() error { _, err := a.MCPPrompt(nilCtx, "res", "greet", nil); return err },
		"CompleteMCPPrompt":    func() error { _, err := a.CompleteMCPPrompt(nilCtx, "res", "greet", "x", "", nil); return err },
	} {
		assert.ErrorIs(t, call(), ErrNilContext, name)
	}
	prompts, err := a.MCPPrompts(t.Context())
	require.NoError(t, err)
	assert.Len(t, prompts, 1, "the server works with a context")
}

// TestNilAgentIsAnError gives a nil *Agent to the functions that take one:
// the typed runs fail saying so, and New refuses a tool made of it.
func TestNilAgentIsAnError(t *testing.T) {
	var nilAgent *Agent
	_, res, err := RunTyped[struct{ A int }](t.Context(), nilAgent, "hi")
	assert.ErrorContains(t, err, "nil *Agent")
	assert.NotNil(t, res)
	for ev, err := range StreamTyped[struct{ A int }](t.Context(), nilAgent, "hi") {
		assert.Equal(t, EventDone, ev.Kind)
		assert.ErrorContains(t, err, "nil *Agent")
	}
	for _, tool := range []Tool{nilAgent.AsTool("helper", "helps"), AgentTool[struct{ Q string }, struct{ A string }](nilAgent, "typed", "helps")} {
		_, err := New(WithModel("m"), WithBaseURL("http://127.0.0.1:1/v1"), WithTools(tool))
		assert.ErrorContains(t, err, fmt.Sprintf("tool %q: robby: nil *Agent", tool.Name()))
	}
}

// TestPortableSchemasApplyToLocalTools sends a NewTool's schema as Gemini
// takes it: no additionalProperties, no type list with null.
func TestPortableSchemasApplyToLocalTools(t *testing.T) {
	type args struct {
		City  string `json:"city"`
		Days  *int   `json:"days,omitempty"`
		Inner struct {
			Unit *string `json:"unit,omitempty"`
		} `json:"inner"`
	}
	tool := NewTool("forecast", "The forecast.", func(_ context.Context, in args) (string, error) {
		days := 0
		if in.Days != nil {
			days = *in.Days
		}
		return fmt.Sprintf("%s for %d days", in.City, days), nil
	})
	require.Contains(t, string(mustJSON(t, tool.Parameters())), "additionalProperties", "the point of the test is gone")

	srv := newServer(t)
	srv.Reply(robbytest.ToolCalls(robbytest.Call("forecast", `{"city":"Oslo","days":null,"inner":{}}`)), robbytest.Text("ok"))
	a := newTestAgent(t, srv, WithTools(tool), WithPortableSchemas())
	res, err := a.Run(t.Context(), "go")
	require.NoError(t, err)
	require.Len(t, res.ToolCalls, 1)
	assert.Equal(t, "Oslo for 0 days", res.ToolCalls[0].Output, "the call is still checked and decoded as before")

	body := string(srv.Requests()[0].Body)
	assert.NotContains(t, body, "additionalProperties")
	assert.NotContains(t, body, `"null"`)
	assert.Contains(t, body, `"nullable":true`)
	assert.NotContains(t, string(mustJSON(t, a.Tools()[0].Parameters())), "additionalProperties")
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
