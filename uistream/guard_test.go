package uistream_test

import (
	"io"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/uistream"
)

var keys = regexp.MustCompile(`sk-[A-Za-z0-9]{20,}`)

func TestGuardedStreamKeepsTheSecret(t *testing.T) {
	srv := newServer(t, robbytest.LateSecret())
	agent := newAgent(t, srv, robby.WithGuards(robby.Guard{On: robby.GuardOutput, Pattern: keys, Action: robby.Redact, Replacement: "[secret]"}))
	h := httptest.NewServer(uistream.New(agent, uistream.Options{}))
	defer h.Close()
	raw, err := io.ReadAll(do(t, h.URL+"/api/chat", "POST", "", chatBody("c", "my key?")).Body)
	require.NoError(t, err)
	assert.False(t, robbytest.Leaks(string(raw), 5), "no piece of the secret is on the wire")
	parts, done := readParts(t, strings.NewReader(string(raw)))
	require.True(t, done)
	var text strings.Builder
	for _, p := range parts {
		if p.typ() == "text-delta" {
			text.WriteString(p["delta"].(string))
		}
	}
	assert.Contains(t, text.String(), "Your key is [secret] and nothing else.")
	assert.False(t, robbytest.Leaks(text.String(), 3))
}

func TestGuardedStreamSaysABlockPlainly(t *testing.T) {
	srv := newServer(t, robbytest.LateSecret())
	agent := newAgent(t, srv, robby.WithGuards(robby.Guard{Name: "no-keys", On: robby.GuardOutput, Pattern: keys, Action: robby.Block,
		Message: "Keys are not given out."}))
	h := httptest.NewServer(uistream.New(agent, uistream.Options{}))
	defer h.Close()
	parts, done := readParts(t, do(t, h.URL+"/api/chat", "POST", "", chatBody("c", "my key?")).Body)
	require.True(t, done)
	assert.NotContains(t, types(parts), "text-delta", "a blocked answer streams none of its text")
	last := parts[len(parts)-2]
	require.Equal(t, "error", last.typ())
	assert.Equal(t, `The server's guard "no-keys" blocked the output (matched its pattern): Keys are not given out.`, last["errorText"])
}
