package uistream_test

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest/agenttest"
	"github.com/robby-go/robby/uistream"
)

// TestHandoffIsAPart: a team's triage hands the chat over to billing, and
// the stream says so in a data-handoff part kept in the message, before
// billing's answer.
func TestHandoffIsAPart(t *testing.T) {
	triage := agenttest.NewTeam(t)
	h := httptest.NewServer(uistream.New(triage, uistream.Options{}))
	defer h.Close()
	parts, done := readParts(t, do(t, h.URL+"/api/chat", "POST", "", chatBody("c", "A refund for order 7.")).Body)
	require.True(t, done)
	at, text := -1, -1
	for i, p := range parts {
		switch p.typ() {
		case "data-handoff":
			at = i
			assert.Equal(t, map[string]any{"from": "triage", "to": "billing", "reason": "a refund"}, p["data"])
			assert.Nil(t, p["transient"])
		case "text-delta":
			text = i
		}
	}
	require.NotEqual(t, -1, at, "no data-handoff part in %v", types(parts))
	assert.Less(t, at, text, "the handoff comes before billing's answer")
}

// TestStoredTeamChat: a team's stored chat reads back as it streamed. The
// handoff is a data-handoff part in the answer, not a user message; each
// answer names its agent, and billing keeps the chat.
func TestStoredTeamChat(t *testing.T) {
	triage := agenttest.NewTeam(t)
	h := httptest.NewServer(uistream.New(triage, uistream.Options{Store: newStore(t),
		Tokens: map[string]string{"alice-token": "alice"}}))
	defer h.Close()
	parts, done := readParts(t, do(t, h.URL+"/api/chat", "POST", "alice-token", chatBody("c", "A refund for order 7.")).Body)
	require.True(t, done)
	finish := parts[len(parts)-1]
	require.Equal(t, "finish", finish.typ())
	assert.Equal(t, "billing", finish["messageMetadata"].(map[string]any)["agent"])
	_, done = readParts(t, do(t, h.URL+"/api/chat", "POST", "alice-token", chatBody("c", "Thanks.")).Body)
	require.True(t, done)

	c := decode[chat](t, do(t, h.URL+"/api/chats/c", "GET", "alice-token", ""))
	var roles, handoffs []string
	for _, m := range c.UIMessages {
		roles = append(roles, m.Role)
		for _, p := range m.Parts {
			if p["type"] == "data-handoff" {
				d := p["data"].(map[string]any)
				handoffs = append(handoffs, d["from"].(string)+" > "+d["to"].(string)+": "+d["reason"].(string))
			}
		}
		if m.Role == "assistant" {
			assert.Equal(t, "billing", m.Metadata["agent"])
		}
	}
	assert.Equal(t, []string{"user", "assistant", "user", "assistant"}, roles, "the note is no user message")
	assert.Equal(t, []string{"triage > billing: a refund"}, handoffs)
}
