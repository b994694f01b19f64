package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// TestChatOffersMCPPrompts runs robby chat with server-everything's prompts
// as /commands: arguments given on the line, asked for with the server's
// completions, and a line that only looks like a command.
func TestChatOffersMCPPrompts(t *testing.T) {
	config := filepath.Join(t.TempDir(), "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{everythingServer(t), "stdio"}},
	}})
	require.NoError(t, os.WriteFile(config, b, 0o600))
	srv := upstream(t, robbytest.Text("Sunny."), robbytest.Text("Done."), robbytest.Text("A path."))
	input := strings.Join([]string{
		"/help",
		"/args-prompt city=Lisbon",
		"/completable-prompt",
		"Eng?",        // the completions of "Eng"
		"Engineering", // department
		"?",           // the completions of name, given the department
		"Alice",
		"/nothing",
		"//usr/bin is a path",
	}, "\n") + "\n"
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	err := run(t.Context(), []string{"chat", "-base-url", srv.URL, "-mcp", config}, strings.NewReader(input), stdout, stderr)
	require.NoError(t, err, stderr.String())
	assert.Equal(t, "Sunny.\nDone.\nA path.\n", stdout.String())

	log := stderr.String()
	assert.Contains(t, log, "MCP prompts. /help lists the commands")
	assert.Contains(t, log, "/exit, /quit   end the chat", "/help lists chat's own commands too")
	assert.Contains(t, log, "/args-prompt city [state] — A prompt with two arguments, one required and one optional (everything)")
	assert.Contains(t, log, "department (Choose the department.) [Engineering, Sales, Marketing, Support]: ")
	assert.Contains(t, log, "department (Choose the department.) [Engineering]: ")
	assert.Contains(t, log, "[Alice, Bob, Charlie]: ", "completions narrowed by the department given")
	assert.Contains(t, log, "no command or prompt /nothing: /help lists them")

	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	last := func(i int) string { m := reqs[i].Messages; return m[len(m)-1].Content }
	assert.Equal(t, "What's weather in Lisbon?", last(0))
	assert.Equal(t, "Please promote Alice to the head of the Engineering team.", last(1))
	assert.Len(t, reqs[1].Messages, 3, "the prompt continues the conversation")
	assert.Equal(t, "/usr/bin is a path", last(2))
}
