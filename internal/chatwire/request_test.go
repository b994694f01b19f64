package chatwire

import (
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEncodeHead(t *testing.T) {
	p := openai.ChatCompletionNewParams{Model: "m", Temperature: openai.Float(0.5),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("left out")}}
	p.SetExtraFields(map[string]any{"top_k": 3})
	for _, stream := range []bool{false, true} {
		head, err := EncodeHead(&p, stream)
		require.NoError(t, err)
		var got map[string]any
		require.NoError(t, json.Unmarshal(append(head, '}'), &got))
		want := map[string]any{"model": "m", "temperature": 0.5, "top_k": float64(3)}
		if stream {
			want["stream_options"] = map[string]any{"include_usage": true}
		}
		assert.Equal(t, want, got)
	}
	p.StreamOptions.IncludeUsage = openai.Bool(false)
	head, err := EncodeHead(&p, true)
	require.NoError(t, err)
	assert.Contains(t, string(head), `"include_usage":false`, "the caller's choice is kept")
}
