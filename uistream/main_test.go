package uistream_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/httpapi/httpapitest"
	"github.com/robby-go/robby/robbytest/agenttest"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var (
	newServer = agenttest.NewServer
	newAgent  = agenttest.New
	newStore  = agenttest.NewStore
	do        = httpapitest.Do
)

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

// addTool adds two numbers.
var addTool = robby.NewTool("add", "Adds two numbers", func(_ context.Context, in addArgs) (int, error) {
	return in.A + in.B, nil
})

// part is a UI message stream part.
type part map[string]any

func (p part) typ() string { s, _ := p["type"].(string); return s }

// readParts reads a UI message stream to its [DONE], and reports whether
// it came.
func readParts(t *testing.T, body io.Reader) ([]part, bool) {
	t.Helper()
	var parts []part
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		require.True(t, ok, "a line not of data: %q", line)
		if data == "[DONE]" {
			return parts, true
		}
		var p part
		require.NoError(t, json.Unmarshal([]byte(data), &p), data)
		parts = append(parts, p)
	}
	return parts, false
}

func types(parts []part) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p.typ()
	}
	return out
}

// chatBody is DefaultChatTransport's body for a chat's new message.
func chatBody(id string, texts ...string) string {
	type msg struct {
		ID    string           `json:"id"`
		Role  string           `json:"role"`
		Parts []map[string]any `json:"parts"`
	}
	var msgs []msg
	for i, t := range texts {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, msg{ID: "m" + string(rune('a'+i)), Role: role, Parts: []map[string]any{{"type": "text", "text": t}}})
	}
	b, _ := json.Marshal(map[string]any{"id": id, "messages": msgs, "trigger": "submit-message"})
	return string(b)
}
