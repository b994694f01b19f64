package robby

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/robby-go/robby/robbytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestToolSchemaSentToModel(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.Text("ok"))
	a := newTestAgent(t, srv, WithTools(addTool))
	_, err := a.Run(t.Context(), "hi")
	require.NoError(t, err)
	var body struct {
		Tools []struct {
			Type     string
			Function struct {
				Name        string
				Description string
				Parameters  map[string]any
			}
		}
	}
	require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &body))
	require.Len(t, body.Tools, 1)
	f := body.Tools[0].Function
	assert.Equal(t, "function", body.Tools[0].Type)
	assert.Equal(t, "Adds two numbers", f.Description)
	assert.Equal(t, "object", f.Parameters["type"])
	assert.ElementsMatch(t, []any{"a", "b"}, f.Parameters["required"])
	props := f.Parameters["properties"].(map[string]any)
	assert.Equal(t, map[string]any{"type": "integer", "description": "the first number"}, props["a"])
}

// TestToolDefinitionAsOpenAIGoEncodesIt: robby writes a tool's definition
// from its schema's encoded parameters, byte for byte as openai-go encodes
// it. This holds for typed and name→func tools, with descriptions that
// need escaping, and without one.
func TestToolDefinitionAsOpenAIGoEncodesIt(t *testing.T) {
	type in struct {
		City string `json:"city" jsonschema:"a <city> & \"its\" country\u2028é"`
		Unit string `json:"unit,omitempty" enum:"c,f"`
	}
	typed := NewTool("weather", "Forecasts <the> weather & more\n\x01\u2028", func(context.Context, in) (string, error) { return "", nil })
	untyped := FuncTool("calc", "", map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "number", "minimum": 1.5}}},
		func(context.Context, map[string]any) (any, error) { return nil, nil })
	for _, tool := range []Tool{typed, untyped, FuncTool("none", "no parameters", nil, func(context.Context, map[string]any) (any, error) { return nil, nil })} {
		require.NoError(t, tool.err)
		require.NotNil(t, tool.paramsJSON, tool.name)
		got, err := tool.definition()
		require.NoError(t, err)
		slow := tool
		slow.paramsJSON = nil // openai-go's own encoding
		want, err := slow.definition()
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), tool.name)
	}
}
