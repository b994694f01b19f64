package agui_test

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/agui"
	"github.com/robby-go/robby/robbytest"
)

var keys = regexp.MustCompile(`sk-[A-Za-z0-9]{20,}`)

func TestGuardedRunKeepsTheSecret(t *testing.T) {
	srv := newServer(t, robbytest.LateSecret())
	agent := newAgent(t, srv, robby.WithGuards(robby.Guard{On: robby.GuardOutput, Pattern: keys, Action: robby.Redact, Replacement: "[secret]"}))
	h := httptest.NewServer(agui.New(agent, agui.Options{}))
	defer h.Close()
	raw, err := io.ReadAll(do(t, h.URL, "POST", "", input("t", ask)).Body)
	require.NoError(t, err)
	assert.False(t, robbytest.Leaks(string(raw), 5), "no piece of the secret is on the wire")
	var text strings.Builder
	for _, e := range readEvents(t, strings.NewReader(string(raw))) {
		if e["type"] == "TEXT_MESSAGE_CONTENT" {
			text.WriteString(e["delta"].(string))
		}
	}
	assert.Contains(t, text.String(), "Your key is [secret] and nothing else.")
	assert.False(t, robbytest.Leaks(text.String(), 3))
}

func TestGuardedRunError(t *testing.T) {
	srv := newServer(t, robbytest.LateSecret())
	agent := newAgent(t, srv, robby.WithGuards(robby.Guard{Name: "no-keys", On: robby.GuardOutput, Pattern: keys, Action: robby.Block}))
	h := httptest.NewServer(agui.New(agent, agui.Options{}))
	defer h.Close()
	events := readEvents(t, do(t, h.URL, "POST", "", input("t", ask)).Body)
	require.Equal(t, []string{"RUN_STARTED", "RUN_ERROR"}, eventTypes(events), "a blocked answer streams none of its text")
	assert.Equal(t, "guardrail_blocked", events[1]["code"])
	msg, _ := json.Marshal(events[1]["message"])
	assert.Contains(t, string(msg), `guard \"no-keys\" blocked the output`)
}
