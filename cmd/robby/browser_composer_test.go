package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// TestBrowserAskWhileOpening: a question sent while the page still opens its
// first chat (its list of chats held up here) is answered in that chat, not
// dropped when the chat opens. Enter while an answer streams keeps the text
// in the composer, to send once the answer has ended.
func TestBrowserAskWhileOpening(t *testing.T) {
	chrome := requireChromium(t)
	srv := upstream(t, robbytest.Text("First answer.").WithUsage(1, 1),
		robbytest.Text(strings.Repeat("slowly ", 60)).WithDelay(100*time.Millisecond).WithUsage(1, 1),
		robbytest.Text("Third answer.").WithUsage(1, 1))
	const token = "open-token"
	base, _ := serveInProcess(t, "-base-url", srv.URL, "-model", "m", "-token", token,
		"-store", filepath.Join(t.TempDir(), "chats.db"))
	root := strings.TrimSuffix(base, "/v1") + "/"
	ctx := newBrowser(t, chrome)
	signIn(t, ctx, root, token)

	// Reloaded, the page asks for the chats first: that request waits.
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	_, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/api/chats"}}})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload()))
	var held fetch.EventRequestPaused
	for ev, err := range paused {
		require.NoError(t, err)
		held = ev
		break
	}
	ask(t, ctx, "Hello")
	_, err = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: held.RequestID})
	require.NoError(t, err)
	_, err = chromedp.Call(ctx, fetch.Disable, cdp.Empty{})
	require.NoError(t, err)
	assert.Contains(t, lastAnswer(t, ctx).Text, "First answer.")
	assert.Equal(t, []string{"msg user: Hello", "msg assistant: First answer."}, conversation(t, ctx))

	ask(t, ctx, "Count slowly")
	poll(t, ctx, `(document.querySelector('#log .msg.assistant:last-child .md')?.textContent || '').includes('slowly')`)
	ask(t, ctx, "And then?")
	kept, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('stop').hidden ? 'the answer ended' : document.getElementById('prompt').value.trim()`))
	require.NoError(t, err)
	assert.Equal(t, "And then?", kept, "Enter while an answer streams keeps the text")
	assert.Contains(t, lastAnswer(t, ctx).Text, "slowly slowly")
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("prompt"), "\r")))
	assert.Contains(t, lastAnswer(t, ctx).Text, "Third answer.")
	assert.Len(t, srv.Requests(), 3, "each question was asked once")
}
