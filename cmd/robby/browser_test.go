package main

// The chat page in a real browser: Debian's chromium, headless, driven by
// chromedp, against `robby serve` with a scripted model and a real MCP
// server's tool. Screenshots go to $ROBBY_SCREENSHOTS, by default
// .artifacts/screenshots at the repository's root (CI keeps that folder).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// requireChromium finds the browser .ci/run installs: without it the test
// is skipped, or fails under CI.
func requireChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("ROBBY_CHROMIUM"), "chromium", "chromium-browser"} {
		if name == "" {
			continue
		}
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (apt-get install -y chromium, as .ci/run does)")
	}
	t.Skip("chromium is not installed: apt-get install -y chromium")
	return ""
}

// newBrowser starts a headless chromium with a fresh profile, stopped with
// the test, and returns the context of its first tab.
func newBrowser(t *testing.T, path string) context.Context {
	t.Helper()
	profile := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile), chromedp.WindowSize(1200, 800),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")), "chromium did not start")
	return ctx
}

// screenshots returns the folder the test's screenshots go to.
func screenshots(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ROBBY_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("..", "..", ".artifacts", "screenshots")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

func shoot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644))
}

// xssAnswer is a model's answer that tries every way to run script in the
// page; each would set window.__xss.
const xssAnswer = "Here is some HTML:\n\n<img src=x onerror=\"window.__xss='img'\">\n\n" +
	"<script>window.__xss='script'</script>\n\n[a link](javascript:window.__xss='md-link')\n\n" +
	"<a href=\"javascript:window.__xss='a'\" id=\"jslink\">another</a>\n\n<svg onload=\"window.__xss='svg'\"></svg>\n\n" +
	"<iframe src=\"javascript:parent.__xss='iframe'\"></iframe>\n\n<form action=\"javascript:window.__xss='form'\"><button id=\"jsform\">go</button></form>\n\n" +
	"<details open ontoggle=\"window.__xss='details'\"><summary>x</summary></details>"

// browserModel answers by the last message: a tool call and its answer, a
// hostile answer, a long slow one; it fails the first of flaky questions.
func browserModel(flaky *atomic.Int32) func(robbytest.Request) robbytest.Reply {
	return func(req robbytest.Request) robbytest.Reply {
		last := req.Messages[len(req.Messages)-1]
		if strings.Contains(last.Content, "flaky") && flaky.Add(1) == 1 {
			return robbytest.Error(400, `{"error":{"message":"the model is overloaded"}}`) // 400: not retried
		}
		return browserReply(last)
	}
}

func browserReply(last robbytest.Message) robbytest.Reply {
	switch {
	case last.Role == "tool" && strings.Contains(last.Content, "Long running"):
		return robbytest.Text("The slow tool finished.").WithUsage(5, 5)
	case last.Role == "tool":
		return robbytest.Text("The server said **"+strings.TrimPrefix(last.Content, "Echo: ")+"**.\n\n```go\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n```").
			WithDelay(20*time.Millisecond).WithUsage(30, 12)
	case strings.Contains(last.Content, "echo"):
		return robbytest.ToolCalls(robbytest.Call("echo", `{"message":"hello browser"}`)).WithUsage(20, 5)
	case strings.Contains(last.Content, "slow tool"):
		return robbytest.ToolCalls(robbytest.Call("trigger-long-running-operation", `{"duration":2,"steps":4}`))
	case strings.Contains(last.Content, "flaky"):
		return robbytest.Text("Fine this time.").WithUsage(3, 3)
	case strings.Contains(last.Content, "HTML"):
		return robbytest.Text(xssAnswer).WithUsage(10, 40)
	case strings.Contains(last.Content, "down"):
		return robbytest.Error(503, `{"error":{"message":"the model is loading, try again in a minute"}}`)
	}
	return robbytest.Text(strings.Repeat("counting on and on ", 200)).WithDelay(150 * time.Millisecond)
}

func TestBrowserChatPage(t *testing.T) {
	chrome := requireChromium(t)
	srv := upstream(t)
	var flaky atomic.Int32
	srv.Fallback(robbytest.Func(browserModel(&flaky)))
	const token = "browser-token"
	base, _ := serveInProcess(t, "-base-url", srv.URL, "-model", "agent", "-token", "alice:"+token,
		"-store", filepath.Join(t.TempDir(), "chats.db"), "-mcp", mcpConfig(t))
	root := strings.TrimSuffix(base, "/v1") + "/"
	dir := screenshots(t)
	ctx := newBrowser(t, chrome)

	paint := firstPaint(t, ctx, root)
	t.Logf("first contentful paint of %s, median of 5 loads: %v", root, paint)
	// 600 ms: CI runs other packages beside this one; at load 10 it measured 388 ms, alone 100 to 190.
	assert.Less(t, paint, 600*time.Millisecond, "the page paints within 600 ms on loopback")

	signIn(t, ctx, root, "alice:"+token)
	stored, err := chromedp.Run(ctx, chromedp.Evaluate[string](`sessionStorage.getItem('robby.token')`))
	require.NoError(t, err)
	assert.Equal(t, token, stored, "USER:TOKEN pasted whole signs in with its token")
	starters(t, ctx)
	shoot(t, ctx, dir, "1-signed-in")

	ask(t, ctx, "Please echo something")
	answer := lastAnswer(t, ctx)
	assert.Contains(t, answer.Text, "The server said hello browser.")
	assert.Equal(t, "hello browser", answer.Strong, "Markdown is rendered")
	assert.Equal(t, "func main() {\n\tfmt.Println(\"hi\")\n}", answer.Code, "code blocks are rendered")
	assert.Equal(t, []string{"echo"}, answer.Tools)
	assert.Contains(t, answer.Results, "Echo: hello browser")
	assert.Contains(t, answer.Usage, "50 tokens in · 17 out")
	assert.Equal(t, []string{"closed done"}, answer.ToolStates, "tool cards are folded, with their status")
	codeBlock(t, ctx, root)
	shoot(t, ctx, dir, "2-answer-with-tool")

	// A reload finds the conversation, in the list and open.
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload()))
	poll(t, ctx, `[...document.querySelectorAll('#chats .open')].some(b => b.textContent === 'Please echo something')`)
	poll(t, ctx, `document.querySelector('#log .msg.assistant details.tool') !== null`)
	assert.Contains(t, lastAnswer(t, ctx).Text, "The server said hello browser.")
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
	require.NoError(t, err)
	assert.NotContains(t, href, token, "the token is never in a URL")
	widths(t, ctx, dir)

	renameAndDelete(t, ctx)

	hostile(t, ctx)
	shoot(t, ctx, dir, "3-hostile-answer")

	stop(t, ctx)
	shoot(t, ctx, dir, "4-stopped")

	slowTool(t, ctx)
	retryStored(t, ctx)

	// The model down: its own words, plainly.
	ask(t, ctx, "Are you down?")
	poll(t, ctx, `(document.querySelector('#log .msg.assistant:last-child .error')?.textContent || '').includes('the model is loading, try again in a minute')`)
	poll(t, ctx, `document.querySelector('#log .msg.assistant:last-child .actions .retry') !== null`)
}

// widths shoots the open chat at desktop and phone widths, light and dark,
// and checks the phone's chat list slides out over the conversation.
func widths(t *testing.T, ctx context.Context, dir string) {
	t.Helper()
	for _, scheme := range []string{"light", "dark"} {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		require.NoError(t, err)
		dark, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`matchMedia('(prefers-color-scheme: dark)').matches`))
		require.NoError(t, err)
		assert.Equal(t, scheme == "dark", dark)

		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1200, 800), chromedp.Reload()))
		poll(t, ctx, `document.querySelector('#log .msg.assistant .usage') !== null && document.querySelector('#log code.highlighted') !== null`)
		visible, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('side').getBoundingClientRect().left >= 0`))
		require.NoError(t, err)
		assert.True(t, visible, "the chat list shows beside the conversation on a desktop")
		// Opened, the tool card shows the arguments and the result.
		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#log details.tool summary`))))
		poll(t, ctx, `document.querySelector('#log details.tool').open`)
		shoot(t, ctx, dir, "desktop-"+scheme)

		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Reload()))
		poll(t, ctx, `document.querySelector('#log .msg.assistant .usage') !== null && document.querySelector('#log code.highlighted') !== null`)
		width, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		require.NoError(t, err)
		assert.LessOrEqual(t, width, 390, "nothing is wider than a phone's screen")
		// The list is out of sight, the conversation from the top.
		hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
			const side = document.getElementById('side').getBoundingClientRect();
			return side.right <= 0 && getComputedStyle(document.getElementById('side')).visibility === 'hidden' &&
				document.getElementById('main').getBoundingClientRect().top === 0;
		})()`))
		require.NoError(t, err)
		assert.True(t, hidden, "on a phone the chat list is out of the way until asked for")
		shoot(t, ctx, dir, "phone-"+scheme)
		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("toggle-side"))))
		poll(t, ctx, `document.getElementById('side').getBoundingClientRect().left === 0 && !document.getElementById('scrim').hidden`)
		shoot(t, ctx, dir, "phone-"+scheme+"-chats")
		// Opening a chat closes the list.
		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#chats li .open`))))
		poll(t, ctx, `document.getElementById('side').getBoundingClientRect().right <= 0 && document.getElementById('scrim').hidden`)
	}
	_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1200, 800), chromedp.Reload()))
	poll(t, ctx, `document.querySelector('#log .msg.assistant .usage') !== null`)
}

// starters: an empty chat offers the MCP server's prompts; one fills the
// composer, one asks for its arguments first.
func starters(t *testing.T, ctx context.Context) {
	t.Helper()
	poll(t, ctx, `document.querySelector('.starter[data-name="simple-prompt"]') !== null`)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.starter[data-name="simple-prompt"]`))))
	poll(t, ctx, `document.getElementById('prompt').value === 'This is a simple prompt without arguments.'`)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.starter[data-name="args-prompt"]`))))
	poll(t, ctx, `document.getElementById('arg-city') === document.activeElement`)
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("arg-city"), "Lisbon\r")))
	poll(t, ctx, `document.getElementById('prompt').value.includes('Lisbon')`)
	poll(t, ctx, `document.querySelector('.starter[data-name="simple-prompt"]') !== null`)
	require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById('prompt').value = ''`)))
}

// codeBlock: the answer's code is highlighted, and its Copy button puts it
// on the clipboard.
func codeBlock(t *testing.T, ctx context.Context, root string) {
	t.Helper()
	poll(t, ctx, `document.querySelector('#log .msg.assistant:last-child code.highlighted [class^="hljs-"]') !== null`)
	origin := strings.TrimSuffix(root, "/")
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		_, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: name}, Setting: "granted", Origin: origin})
		require.NoError(t, err)
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#log .msg.assistant:last-child .code-bar .copy`))))
	poll(t, ctx, `document.querySelector('#log .msg.assistant:last-child .code-bar .copy').textContent === 'Copied'`)
	copied, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	assert.Equal(t, "func main() {\n\tfmt.Println(\"hi\")\n}\n", copied)
}

// slowTool: a tool call shows running while it runs, then done.
func slowTool(t *testing.T, ctx context.Context) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("new-chat"))))
	ask(t, ctx, "Run the slow tool")
	poll(t, ctx, `document.querySelector('#log .msg.assistant:last-child details.tool .state.running')?.textContent === 'running…'`)
	a := lastAnswer(t, ctx)
	assert.Equal(t, []string{"closed done"}, a.ToolStates)
	assert.Contains(t, a.Text, "The slow tool finished.")
}

// retryStored: a failed answer of a stored chat is retried; the chat shows
// what its store keeps, before and after a reload.
func retryStored(t *testing.T, ctx context.Context) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("new-chat"))))
	ask(t, ctx, "A flaky question")
	poll(t, ctx, `(document.querySelector('#log .msg.assistant:last-child .error')?.textContent || '').includes('the model is overloaded')`)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#log .msg.assistant:last-child .actions .retry`))))
	assert.Contains(t, lastAnswer(t, ctx).Text, "Fine this time.")
	shown := conversation(t, ctx)
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload()))
	poll(t, ctx, `document.querySelector('#log .msg.assistant:last-child .usage') !== null`)
	assert.Equal(t, shown, conversation(t, ctx), "the page shows the stored chat as it was")
	// Regenerate: asked again, both answers shown and kept.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#log .msg.assistant:last-child .actions .regenerate`))))
	poll(t, ctx, `document.querySelectorAll('#log .msg.assistant').length === 3 && document.querySelector('#log .msg.assistant:last-child .usage') !== null`)
	shown = conversation(t, ctx)
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload()))
	poll(t, ctx, `document.querySelectorAll('#log .msg.assistant').length === 3`)
	assert.Equal(t, shown, conversation(t, ctx), "the page shows the stored chat as it was")
}

// conversation reads the roles and texts of the messages shown.
func conversation(t *testing.T, ctx context.Context) []string {
	t.Helper()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify([...document.querySelectorAll('#log .msg')].map((m) =>
		m.className + ': ' + (m.classList.contains('user') ? m.querySelector('.body').textContent : [...m.querySelectorAll('.md')].map((e) => e.textContent.trim()).join(' '))))`))
	require.NoError(t, err)
	var out []string
	require.NoError(t, json.Unmarshal([]byte(raw), &out))
	return out
}

// TestBrowserRegenerateAndEdit: without a store the page holds the
// conversation, so regenerating replaces the last answer and an edit the
// last question; the model is sent neither the old answer nor the old
// question. A failed tool shows failed; no MCP server, no starters.
func TestBrowserRegenerateAndEdit(t *testing.T) {
	chrome := requireChromium(t)
	srv := upstream(t)
	var n atomic.Int32
	srv.Fallback(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == "user" && strings.Contains(last.Content, "broken tool"):
			return robbytest.ToolCalls(robbytest.Call("no-such-tool", `{}`))
		case last.Role == "tool":
			return robbytest.Text("The tool failed.")
		}
		return robbytest.Text(fmt.Sprintf("answer %d to %s", n.Add(1), last.Content)).WithUsage(1, 1)
	}))
	base, _ := serveInProcess(t, "-base-url", srv.URL, "-model", "agent", "-token", "plain-token")
	root := strings.TrimSuffix(base, "/v1") + "/"
	ctx := newBrowser(t, chrome)
	signIn(t, ctx, root, "plain-token")
	poll(t, ctx, `document.querySelector('#log .empty') !== null`)
	time.Sleep(200 * time.Millisecond) // the prompts' answer, which is empty
	starters, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('.starter').length`))
	require.NoError(t, err)
	assert.Zero(t, starters, "no MCP server, no starters")

	ask(t, ctx, "Name a colour")
	assert.Contains(t, lastAnswer(t, ctx).Text, "answer 1 to Name a colour")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#log .msg.assistant:last-child .actions .regenerate`))))
	poll(t, ctx, `(document.querySelector('#log .msg.assistant:last-child .md')?.textContent || '').includes('answer 2')`)
	lastAnswer(t, ctx)
	assert.Equal(t, []string{"msg user: Name a colour", "msg assistant: answer 2 to Name a colour"}, conversation(t, ctx))
	reqs := srv.Requests()
	assert.Equal(t, []string{"user"}, roles(reqs[len(reqs)-1]), "the old answer is not sent")

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#log .msg.user:nth-last-child(2) .actions .edit`))))
	poll(t, ctx, `document.activeElement?.matches('form.edit textarea')`)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`document.activeElement.value = ''`),
		chromedp.KeyEvent("Name a fruit\r"),
	))
	poll(t, ctx, `(document.querySelector('#log .msg.assistant:last-child .md')?.textContent || '').includes('answer 3')`)
	lastAnswer(t, ctx)
	assert.Equal(t, []string{"msg user: Name a fruit", "msg assistant: answer 3 to Name a fruit"}, conversation(t, ctx))
	reqs = srv.Requests()
	assert.Equal(t, []string{"user"}, roles(reqs[len(reqs)-1]), "the old question is not sent")

	ask(t, ctx, "Use the broken tool")
	a := lastAnswer(t, ctx)
	assert.Equal(t, []string{"closed failed"}, a.ToolStates)
	reqs = srv.Requests()
	assert.Equal(t, []string{"user", "assistant", "user", "assistant", "tool"}, roles(reqs[len(reqs)-1]))
}

// roles lists the roles of a request's messages, its system prompt left out.
func roles(req robbytest.Request) []string {
	var out []string
	for _, m := range req.Messages {
		if m.Role != "system" {
			out = append(out, m.Role)
		}
	}
	return out
}

// firstPaint loads the page five times and returns the median of its
// first contentful paints.
func firstPaint(t *testing.T, ctx context.Context, url string) time.Duration {
	t.Helper()
	var paints []time.Duration
	for range 5 {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url)))
		ms, err := chromedp.Run(ctx, chromedp.Poll[float64](
			`performance.getEntriesByName('first-contentful-paint')[0]?.startTime`, chromedp.WithPollingTimeout(10*time.Second)))
		require.NoError(t, err)
		paints = append(paints, time.Duration(ms*float64(time.Millisecond)))
	}
	slices.Sort(paints)
	return paints[len(paints)/2]
}

func poll(t *testing.T, ctx context.Context, predicate string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil {
		shoot(t, ctx, screenshots(t), "failed-"+t.Name())
		log, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('log').innerText`))
		t.Fatalf("waiting for %s: %v; the conversation shows:\n%s", predicate, err, log)
	}
}

func signIn(t *testing.T, ctx context.Context, root, token string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(root), chromedp.WaitVisible(chromedp.ID("token"))))
	time.Sleep(200 * time.Millisecond) // the page's first requests, answered 401
	quiet, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('sign-in-error').hidden &&
		document.querySelectorAll('#log .error').length === 0`))
	require.NoError(t, err)
	assert.True(t, quiet, "no error before the first attempt")
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("token"), "not-the-token\r")))
	poll(t, ctx, `document.getElementById('sign-in-error').textContent.includes('not accepted')`)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`document.getElementById('token').value = ''`),
		chromedp.SendKeys(chromedp.ID("token"), token+"\r"),
	))
	poll(t, ctx, `!document.getElementById('sign-in').open`)
}

// ask types a question and sends it with Enter, as a user would.
func ask(t *testing.T, ctx context.Context, question string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("prompt"), question+"\r")))
}

type answer struct {
	Text, Strong, Code, Usage  string
	Tools, Results, ToolStates []string
}

// answerEnded holds once the page is done with an answer: its usage or
// error shows as soon as the stream sends it, its buttons and the composer
// only after the stream's end, which may come later.
const answerEnded = `document.getElementById('stop').hidden`

// lastAnswer waits for the last answer to end, and reads it.
func lastAnswer(t *testing.T, ctx context.Context) answer {
	t.Helper()
	poll(t, ctx, `document.querySelector('#log .msg.assistant:last-child .usage') !== null && `+answerEnded)
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const m = [...document.querySelectorAll('#log .msg.assistant')].pop();
		const all = (sel) => [...m.querySelectorAll(sel)].map((e) => e.textContent);
		return JSON.stringify({
			Text: all('.md').join('\n'), Strong: m.querySelector('.md strong')?.textContent || '',
			Code: m.querySelector('.md pre code')?.textContent.trim() || '', Usage: m.querySelector('.usage').textContent,
			Tools: all('details.tool .name'), Results: all('details.tool pre'),
			ToolStates: [...m.querySelectorAll('details.tool')].map((d) => (d.open ? 'open ' : 'closed ') + d.dataset.status),
		});
	})()`))
	require.NoError(t, err)
	var a answer
	require.NoError(t, json.Unmarshal([]byte(raw), &a))
	return a
}

// hostile has the model answer with script in every form; none runs.
func hostile(t *testing.T, ctx context.Context) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("new-chat"))))
	ask(t, ctx, "Show me some HTML")
	a := lastAnswer(t, ctx)
	assert.Contains(t, a.Text, "Here is some HTML")
	// Follow what could be followed: the links and the form.
	require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`
		document.querySelectorAll('#log .md a').forEach((a) => a.click());
		document.querySelector('#log .md #jsform')?.click();
	`)))
	time.Sleep(300 * time.Millisecond)
	forms, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#log .md form, #log .md button').length`))
	require.NoError(t, err)
	assert.Zero(t, forms, "an answer's forms are dropped")
	flag, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(window.__xss)`))
	require.NoError(t, err)
	assert.Equal(t, "undefined", flag, "a script of the model's answer ran")
	left, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const md = [...document.querySelectorAll('#log .md')].pop();
		return [...md.querySelectorAll('*')].flatMap((e) => [...e.attributes].map((a) => e.tagName + ' ' + a.name + '=' + a.value))
			.filter((s) => /^(\S+) on|javascript:/i.test(s)).join('; ');
	})()`))
	require.NoError(t, err)
	assert.Empty(t, left, "handlers or javascript: URLs left in the page")
}

// stop starts a long answer and stops it with the Stop button.
func stop(t *testing.T, ctx context.Context) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("new-chat"))))
	ask(t, ctx, "Count for a long time")
	poll(t, ctx, `(document.querySelector('#log .msg.assistant:last-child .md')?.textContent || '').includes('counting')`)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("stop"))))
	poll(t, ctx, `document.querySelector('#log .msg.assistant:last-child .error')?.textContent === 'Stopped.'`)
	poll(t, ctx, `!document.getElementById('send').hidden && document.getElementById('stop').hidden`)
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#log .msg.assistant:last-child .md').textContent`))
	require.NoError(t, err)
	assert.Less(t, len(text), len(strings.Repeat("counting on and on ", 200)), "the answer was cut short")
}

// renameAndDelete renames the open chat with F2, then deletes it with its
// button, and finds the list changed after a reload.
func renameAndDelete(t *testing.T, ctx context.Context) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent(kb.F2)))
	poll(t, ctx, `document.activeElement?.matches('#chats input')`)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`document.activeElement.value = ''`),
		chromedp.KeyEvent("Echo test, renamed\r"),
	))
	poll(t, ctx, `document.getElementById('title').textContent === 'Echo test, renamed'`)
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload()))
	poll(t, ctx, `document.querySelector('#chats li[aria-selected=true] .open')?.textContent === 'Echo test, renamed'`)
	require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`
		window.confirm = () => true; // the page asks before it deletes
		document.querySelector('#chats li[aria-selected=true] .act:last-child').click();
	`)))
	poll(t, ctx, `document.querySelectorAll('#chats li').length === 0 && document.getElementById('title').textContent === 'New chat'`)
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload()))
	poll(t, ctx, `document.getElementById('title').textContent === 'New chat'`)
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#chats li').length`))
	require.NoError(t, err)
	assert.Zero(t, n, "the deleted chat is gone from the store")
}
