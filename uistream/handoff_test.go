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
