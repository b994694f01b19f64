package robby

import (
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
