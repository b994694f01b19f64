package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// TestBrowserGuardBlock asks the chat page of robby serve -guards a question
// whose answer a guard blocks, and one whose answer it redacts: the page says
// plainly which guard blocked the answer, and shows none of its text, and
// the redacted answer without its secret.
func TestBrowserGuardBlock(t *testing.T) {
	chrome := requireChromium(t)
	guards, srv := redactAndBlock(t) // a key late in a long answer, then "beast"
	dir := t.TempDir()
	const token = "guard-token"
	base, _ := serveInProcess(t, "-base-url", srv.URL, "-model", "m", "-token", token,
		"-store", filepath.Join(dir, "chats.db"), "-guards", guards)
	root := strings.TrimSuffix(base, "/v1") + "/"
	ctx := newBrowser(t, chrome)
	signIn(t, ctx, root, token)

	ask(t, ctx, "What is my key?")
	a := lastAnswer(t, ctx)
	assert.Contains(t, a.Text, "Your key is [secret]")
	for i := 0; i+3 <= len(robbytest.Secret); i++ {
		require.NotContains(t, a.Text, robbytest.Secret[i:i+3], "a piece of the secret reached the page")
	}

	ask(t, ctx, "Tell me about the beast")
	poll(t, ctx, `(document.querySelector('#log .msg.assistant:last-child .error')?.textContent || '').includes('blocked') && `+answerEnded)
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`document.querySelector('#log .msg.assistant:last-child').innerText`))
	require.NoError(t, err)
	assert.Contains(t, shown, `guard "no-beast" blocked the output`, "the page names the guard")
	assert.Contains(t, shown, "Not here.", "and says the guard's message")
	assert.NotContains(t, shown, "Here is", "and shows none of the blocked text")
	assert.Contains(t, shown, "Retry")
	shoot(t, ctx, screenshots(t), "guard-blocked")
}
