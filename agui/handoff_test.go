package agui_test

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/robby-go/robby/agui"
	"github.com/robby-go/robby/robbytest/agenttest"
)

// TestHandoffIsACustomEvent: a team's triage hands the thread over to
// billing, and the run says so in a robby.handoff event.
func TestHandoffIsACustomEvent(t *testing.T) {
	triage := agenttest.NewTeam(t)
	h := httptest.NewServer(agui.New(triage, agui.Options{}))
	defer h.Close()
	events := readEvents(t, do(t, h.URL, "POST", "", input("t", `[{"id":"1","role":"user","content":"A refund for order 7."}]`)).Body)
	var found bool
	for _, e := range events {
		if e["type"] == "CUSTOM" && e["name"] == "robby.handoff" {
			found = true
			assert.Equal(t, map[string]any{"from": "triage", "to": "billing", "reason": "a refund"}, e["value"])
		}
	}
	assert.True(t, found, "no robby.handoff event in %v", eventTypes(events))
}
