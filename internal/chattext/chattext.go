// Package chattext reads the text of a chat-completions message. The agent's
// summaries and the test kit's recorded requests both use it.
package chattext

import (
	"encoding/json"
	"strings"
)

// Content reads a message's content: a string, or the text of its parts
// joined. Anything else reads as empty.
func Content(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}
