package robby

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

type ticket struct {
	Priority string   `json:"priority" enum:"low,normal,high"`
	Labels   []string `json:"labels" enum:"bug,feature"`
	Level    int      `json:"level" enum:"1,2,3"`
	Owner    *string  `json:"owner,omitempty" enum:"ann,bob"`
}

// TestEnumTags: an enum tag lists a field's values, in a tool's schema and
// a typed answer's; a value outside it is sent back to be repaired.
func TestEnumTags(t *testing.T) {
	tool := NewTool("file", "", func(context.Context, ticket) (string, error) { return "", nil })
	props := tool.params["properties"].(map[string]any)
	assert.Equal(t, []any{"low", "normal", "high"}, props["priority"].(map[string]any)["enum"])
	assert.Equal(t, []any{"bug", "feature"}, props["labels"].(map[string]any)["items"].(map[string]any)["enum"])
	assert.Equal(t, []any{1.0, 2.0, 3.0}, props["level"].(map[string]any)["enum"])

	srv := newServer(t)
	a := newTestAgent(t, srv)
	srv.Reply(
		robbytest.Answer(`{"priority": "urgent", "labels": ["bug", "chore"], "level": 4}`),
		robbytest.Answer(`{"priority": "high", "labels": ["bug"], "level": 2, "owner": "ann"}`),
	)
	got, _, err := RunTyped[ticket](context.Background(), a, "File it", WithAnswerMode(AnswerNative))
	require.NoError(t, err)
	owner := "ann"
	assert.Equal(t, ticket{Priority: "high", Labels: []string{"bug"}, Level: 2, Owner: &owner}, got)
	reqs := srv.Requests()
	var rf struct {
		JSONSchema struct {
			Strict bool            `json:"strict"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	require.NoError(t, json.Unmarshal(reqs[0].ResponseFormat, &rf))
	assert.True(t, rf.JSONSchema.Strict)
	assert.Contains(t, string(rf.JSONSchema.Schema), `"enum":["low","normal","high"]`)
	assert.Contains(t, string(rf.JSONSchema.Schema), `"enum":["ann","bob",null]`)
	repair := reqs[1].Messages[len(reqs[1].Messages)-1].Content
	assert.Contains(t, repair, `/priority: must be one of ["low","normal","high"], got "urgent"`)
	assert.Contains(t, repair, `/labels/1: must be one of ["bug","feature"], got "chore"`)
	assert.Contains(t, repair, `/level: must be one of [1,2,3], got 4`)

	type bad struct {
		Level int `json:"level" enum:"one"`
	}
	_, _, err = RunTyped[bad](context.Background(), a, "x")
	assert.ErrorContains(t, err, `field Level: enum value "one" is not a int`)
}
