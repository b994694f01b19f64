package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// TestBrowserTeamChat: `robby serve -agents -store` in a real browser.
// triage hands the chat over to billing, whose MCP tool echo the -mcp file
// annotates destructive. The page notes the handoff, names the agent that
// answered, and marks the destructive call; after a reload, the stored
// chat shows the handoff and the agent as they streamed, and the next
// question goes to billing.
func TestBrowserTeamChat(t *testing.T) {
	chrome := requireChromium(t)
	srv := upstream(t)
	srv.Fallback(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case strings.Contains(req.Messages[0].Content, "route"):
			return robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"a refund"}`))
		case last.Role == "tool":
			return robbytest.Text("Order 7 is refunded.").WithUsage(12, 5)
		case strings.Contains(last.Content, "handed the conversation over"):
			return robbytest.ToolCalls(robbytest.Call("echo", `{"message":"refund order 7"}`))
		}
		return robbytest.Text("You are welcome.").WithUsage(8, 3)
	}))
	dir := t.TempDir()
	team := filepath.Join(dir, "team.json")
	require.NoError(t, os.WriteFile(team, []byte(`{"root": "triage", "agents": {
		"triage":  {"description": "Routes the user", "instructions": "You route the user.", "handoffs": ["billing"]},
		"billing": {"description": "Refunds", "instructions": "You handle refunds.", "mcpServers": ["everything"]}}}`), 0o600))
	mcpFile := filepath.Join(dir, "mcp.json")
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{
		"command": "node", "args": []string{everythingServer(t), "stdio"},
		"toolAnnotations": map[string]any{"echo": map[string]any{"destructiveHint": true}}}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(mcpFile, b, 0o600))
	const token = "team-token"
	base, _ := serveInProcess(t, "-base-url", srv.URL, "-model", "m", "-token", "alice:"+token,
		"-store", filepath.Join(dir, "chats.db"), "-agents", team, "-mcp", mcpFile)
	root := strings.TrimSuffix(base, "/v1") + "/"
	ctx := newBrowser(t, chrome)
	signIn(t, ctx, root, "alice:"+token)

	ask(t, ctx, "A refund for order 7, please")
	a := lastAnswer(t, ctx)
	assert.Contains(t, a.Text, "Order 7 is refunded.")
	assert.Contains(t, a.Usage, "billing answered")
	assert.Equal(t, []string{"transfer_to_billing", "echo"}, a.Tools)
	assert.Equal(t, []string{"closed done", "closed done"}, a.ToolStates, "the transfer is a call that ended")
	const note = `billing answers from here (handed over by triage: a refund)`
	shown := teamPage(t, ctx)
	assert.Equal(t, []string{note}, shown.Notes)
	assert.Equal(t, []string{"destructive"}, shown.Marks, "echo is destructive by the -mcp file")
	shoot(t, ctx, screenshots(t), "team-handoff")

	// Reloaded, the chat is the store's: the handoff and the agent as streamed.
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload()))
	poll(t, ctx, `document.querySelector('#log .msg.assistant .usage') !== null`)
	shown = teamPage(t, ctx)
	assert.Equal(t, []string{note}, shown.Notes)
	assert.Equal(t, 1, shown.Users, "the note to billing is no message of the user's")
	assert.Contains(t, lastAnswer(t, ctx).Usage, "billing answered")

	ask(t, ctx, "Thanks")
	poll(t, ctx, `document.querySelectorAll('#log .msg.assistant').length === 2`)
	a = lastAnswer(t, ctx)
	assert.Contains(t, a.Text, "You are welcome.")
	assert.Contains(t, a.Usage, "billing answered", "billing keeps the chat")
}

// teamView is what the page shows of a team's chat.
type teamView struct {
	Notes, Marks []string // the handoff notes, the destructive marks
	Users        int      // the user's messages
}

func teamPage(t *testing.T, ctx context.Context) teamView {
	t.Helper()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({
		Notes: [...document.querySelectorAll('#log .msg.assistant .notice')].map((e) => e.textContent),
		Marks: [...document.querySelectorAll('#log details.tool .state.destructive')].map((e) => e.textContent),
		Users: document.querySelectorAll('#log .msg.user').length,
	})`))
	require.NoError(t, err)
	var v teamView
	require.NoError(t, json.Unmarshal([]byte(raw), &v))
	return v
}
