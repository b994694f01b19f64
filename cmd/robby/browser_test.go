package main

// The chat page in a real browser: Debian's chromium, headless, driven by
// chromedp, against `robby serve` with a scripted model and a real MCP
// server's tool. Screenshots go to $ROBBY_SCREENSHOTS, by default
// .artifacts/screenshots at the repository's root (CI keeps that folder).

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
// hostile answer, a long slow one.
func browserModel(req robbytest.Request) robbytest.Reply {
	last := req.Messages[len(req.Messages)-1]
	switch {
	case last.Role == "tool":
		return robbytest.Text("The server said **"+strings.TrimPrefix(last.Content, "Echo: ")+"**.\n\n```go\nfmt.Println(\"hi\")\n```").
			WithDelay(20*time.Millisecond).WithUsage(30, 12)
	case strings.Contains(last.Content, "echo"):
		return robbytest.ToolCalls(robbytest.Call("echo", `{"message":"hello browser"}`)).WithUsage(20, 5)
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
	srv.Fallback(robbytest.Func(browserModel))
	const token = "browser-token"
	base, _ := serveInProcess(t, "-base-url", srv.URL, "-model", "agent", "-token", "alice:"+token,
		"-store", filepath.Join(t.TempDir(), "chats.db"), "-mcp", mcpConfig(t))
	root := strings.TrimSuffix(base, "/v1") + "/"
	dir := screenshots(t)
	ctx := newBrowser(t, chrome)

	paint := firstPaint(t, ctx, root)
	t.Logf("first contentful paint of %s, median of 5 loads: %v", root, paint)
	assert.Less(t, paint, 300*time.Millisecond, "the page paints within 300 ms on loopback")

	signIn(t, ctx, root, token)
	shoot(t, ctx, dir, "1-signed-in")

	ask(t, ctx, "Please echo something")
	answer := lastAnswer(t, ctx)
	assert.Contains(t, answer.Text, "The server said hello browser.")
	assert.Equal(t, "hello browser", answer.Strong, "Markdown is rendered")
	assert.Equal(t, "fmt.Println(\"hi\")", answer.Code, "code blocks are rendered")
	assert.Equal(t, []string{"echo"}, answer.Tools)
	assert.Contains(t, answer.Results, "Echo: hello browser")
	assert.Contains(t, answer.Usage, "50 tokens in · 17 out")
	shoot(t, ctx, dir, "2-answer-with-tool")

	// A reload finds the conversation, in the list and open.
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload()))
	poll(t, ctx, `[...document.querySelectorAll('#chats .open')].some(b => b.textContent === 'Please echo something')`)
	poll(t, ctx, `document.querySelector('#log .msg.assistant details.tool') !== null`)
	assert.Contains(t, lastAnswer(t, ctx).Text, "The server said hello browser.")
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
	require.NoError(t, err)
	assert.NotContains(t, href, token, "the token is never in a URL")

	renameAndDelete(t, ctx)

	hostile(t, ctx)
	shoot(t, ctx, dir, "3-hostile-answer")

	stop(t, ctx)
	shoot(t, ctx, dir, "4-stopped")

	// The model down: its own words, plainly.
	ask(t, ctx, "Are you down?")
	poll(t, ctx, `(document.querySelector('#log .msg.assistant:last-child .error')?.textContent || '').includes('the model is loading, try again in a minute')`)

	_, err = chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)))
	width, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	require.NoError(t, err)
	assert.LessOrEqual(t, width, 390, "nothing is wider than a phone's screen")
	shoot(t, ctx, dir, "5-phone-dark")
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
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(root),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), "not-the-token\r"),
	))
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
	Text, Strong, Code, Usage string
	Tools, Results            []string
}

// lastAnswer waits for the last answer to end, and reads it.
func lastAnswer(t *testing.T, ctx context.Context) answer {
	t.Helper()
	poll(t, ctx, `document.querySelector('#log .msg.assistant:last-child .usage') !== null`)
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const m = [...document.querySelectorAll('#log .msg.assistant')].pop();
		const all = (sel) => [...m.querySelectorAll(sel)].map((e) => e.textContent);
		return JSON.stringify({
			Text: all('.md').join('\n'), Strong: m.querySelector('.md strong')?.textContent || '',
			Code: m.querySelector('.md pre code')?.textContent.trim() || '', Usage: m.querySelector('.usage').textContent,
			Tools: all('details.tool .name'), Results: all('details.tool pre'),
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
