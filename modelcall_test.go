package robby

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/robby-go/robby/internal/chatwire"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// robby encodes the messages it makes itself; these check its JSON against
// openai-go's for the same message.

var trickyStrings = []string{
	"", "plain", `quote " and \ backslash`, "<b>&amp;</b>", "line\nbreak\ttab\r", "\x00\x01\x1f control",
	"é ü 漢字 🙂", "\u2028\u2029 separators", "invalid \xff\xfe UTF-8", "cut \xe2\x82", strings.Repeat("long ", 2000),
}

func requireSameJSON(t *testing.T, want openai.ChatCompletionMessageParamUnion, got json.RawMessage) {
	t.Helper()
	b, err := json.Marshal(want)
	require.NoError(t, err)
	require.JSONEq(t, string(b), string(got))
}

func TestOwnMessageJSONMatchesOpenAI(t *testing.T) {
	for _, s := range trickyStrings {
		requireSameJSON(t, openai.UserMessage(s), chatwire.UserJSON(s))
		requireSameJSON(t, openai.ToolMessage(s, "call_"+s), chatwire.ToolJSON(s, "call_"+s))
		for _, calls := range [][]ToolCall{nil, {{ID: s, Name: "f", Arguments: `{"q":` + mustQuote(s) + `}`}, {ID: "b", Name: "g", Arguments: "{}"}}} {
			var r reply
			r.text.WriteString(s)
			if len(calls) > 0 {
				r.extras = map[string]map[string]any{"b": {
					"extra_content": json.RawMessage(`{"google":{"thought_signature":"x"}}`), "n": 1, "x-" + s: "v"}}
			}
			m, raw := r.message(calls)
			require.NotNil(t, raw)
			requireSameJSON(t, m, raw)
		}
	}
}

func mustQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestRequestBody(t *testing.T) {
	msg := func(s string) json.RawMessage { return chatwire.UserJSON(s) }
	tool := json.RawMessage(`{"type":"function","function":{"name":"t"}}`)
	cases := []struct {
		name string
		req  request
		want string
	}{
		{"empty head", request{head: []byte("{")},
			`{"messages":[]}`},
		{"history and pending", request{head: []byte(`{"model":"m"`), history: []json.RawMessage{msg("a")}, pending: []json.RawMessage{msg("b")}},
			`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`},
		{"pending only", request{head: []byte(`{"model":"m"`), pending: []json.RawMessage{msg("b")}},
			`{"model":"m","messages":[{"role":"user","content":"b"}]}`},
		{"tools and stream", request{head: []byte(`{"model":"m"`), history: []json.RawMessage{msg("a")}, tools: []json.RawMessage{tool}, caller: []json.RawMessage{tool}, stream: true},
			`{"model":"m","messages":[{"role":"user","content":"a"}],"tools":[` + string(tool) + `,` + string(tool) + `],"stream":true}`},
		{"external only", request{head: []byte(`{"model":"m"`), caller: []json.RawMessage{tool}},
			`{"model":"m","messages":[],"tools":[` + string(tool) + `]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.req.body()
			assert.Equal(t, c.want, string(b))
			assert.True(t, json.Valid(b))
		})
	}
}

// TestConversationEncodedOnce checks that a message is encoded once in a
// conversation's life. The JSON sent for it on later turns is the same
// bytes, not encoded again.
func TestConversationEncodedOnce(t *testing.T) {
	var conv messages
	conv.add(openai.UserMessage("made by the caller"), nil)
	first, err := conv.encoded()
	require.NoError(t, err)
	conv.add(openai.UserMessage("made by robby"), chatwire.UserJSON("made by robby"))
	second, err := conv.encoded()
	require.NoError(t, err)
	require.Len(t, second, 2)
	assert.Same(t, &first[0][0], &second[0][0], "message 0 encoded again")

	var gap messages
	gap.add(openai.UserMessage("not encoded"), nil)
	gap.add(openai.UserMessage("encoded"), chatwire.UserJSON("encoded"))
	assert.Empty(t, gap.raw, "an encoding after a missing one would be taken for the wrong message")
	all, err := gap.encoded()
	require.NoError(t, err)
	assert.JSONEq(t, `{"role":"user","content":"encoded"}`, string(all[1]))
}
