package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPageHeaders: the page forbids inline script and foreign requests,
// and needs no token (it holds no data); the API routes do.
func TestPageHeaders(t *testing.T) {
	srv := upstream(t)
	base, _ := serveInProcess(t, "-base-url", srv.URL, "-model", "agent", "-token", "page-token")
	root := strings.TrimSuffix(base, "/v1")
	for _, path := range []string{"/", "/assets/app.js", "/assets/app.css", "/assets/vendor/marked.esm.js", "/assets/vendor/purify.es.mjs",
		"/assets/vendor/highlight.min.js", "/assets/vendor/github.min.css"} {
		resp, err := http.Get(root + path)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		csp := resp.Header.Get("Content-Security-Policy")
		assert.Contains(t, csp, "script-src 'self';", path)
		assert.Contains(t, csp, "connect-src 'self';", path)
		assert.NotContains(t, csp, "unsafe-inline", path)
		assert.NotContains(t, csp, "unsafe-eval", path)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
		if strings.HasSuffix(path, "js") {
			assert.Contains(t, resp.Header.Get("Content-Type"), "javascript", path)
		}
	}
	resp, err := http.Get(root + "/api/chats")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the chats need the token")
	resp, err = http.Post(root+"/ag-ui", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "AG-UI needs the token")
}

// TestServeCORSOnTheChatRoutes: -cors lets a listed origin's pages use the
// chat protocols from a browser, and no other's.
func TestServeCORSOnTheChatRoutes(t *testing.T) {
	srv := upstream(t)
	base, _ := serveInProcess(t, "-base-url", srv.URL, "-model", "agent", "-cors", "https://chat.example.com")
	root := strings.TrimSuffix(base, "/v1")
	for _, path := range []string{"/api/chat", "/ag-ui", "/api/chats/x"} {
		for origin, want := range map[string]int{"https://chat.example.com": http.StatusNoContent, "https://evil.example": http.StatusForbidden} {
			req, err := http.NewRequest(http.MethodOptions, root+path, nil)
			require.NoError(t, err)
			req.Header.Set("Origin", origin)
			req.Header.Set("Access-Control-Request-Method", "POST")
			req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, want, resp.StatusCode, "%s from %s", path, origin)
			if want == http.StatusNoContent {
				assert.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"), path)
				assert.Equal(t, "authorization, content-type", resp.Header.Get("Access-Control-Allow-Headers"), path)
			}
		}
	}
	assert.Empty(t, srv.Requests())
}

// TestPageHasNoInlineScript: every script of the page is a file of its
// own, which the policy allows; nothing is loaded from another host.
func TestPageHasNoInlineScript(t *testing.T) {
	html, err := web.ReadFile("web/index.html")
	require.NoError(t, err)
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAll(html, -1) {
		assert.Contains(t, string(tag), `src="/assets/`, "an inline script: %s", tag)
	}
	assert.NotRegexp(t, `\son[a-z]+=`, string(html), "an inline event handler")
	for _, f := range []string{"web/index.html", "web/app.js", "web/app.css"} {
		b, err := web.ReadFile(f)
		require.NoError(t, err)
		assert.NotRegexp(t, `https?://`, string(b), "%s loads something from another host", f)
	}
}

// TestVendoredLibraries: the vendored files are the npm packages' own, at
// the versions .ci/install-mcp.sh pins and web/vendor/README.md states.
func TestVendoredLibraries(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "..", ".ci", "install-mcp.sh"))
	require.NoError(t, err)
	readme, err := web.ReadFile("web/vendor/README.md")
	require.NoError(t, err)
	modules := filepath.Join("..", "..", ".bench", "webui", "node_modules")
	for _, v := range []struct{ pkg, pin, file, from string }{
		{"marked", "MARKED_VERSION", "marked.esm.js", "lib/marked.esm.js"},
		{"dompurify", "DOMPURIFY_VERSION", "purify.es.mjs", "dist/purify.es.mjs"},
		{"@highlightjs/cdn-assets", "HIGHLIGHT_VERSION", "highlight.min.js", "es/highlight.min.js"},
		{"@highlightjs/cdn-assets", "HIGHLIGHT_VERSION", "github.min.css", "styles/github.min.css"},
		{"@highlightjs/cdn-assets", "HIGHLIGHT_VERSION", "github-dark.min.css", "styles/github-dark.min.css"},
	} {
		m := regexp.MustCompile(`(?m)^` + v.pin + `=(\S+)$`).FindSubmatch(script)
		require.NotNil(t, m, "install-mcp.sh pins no %s", v.pin)
		assert.Contains(t, string(readme), "| "+v.file+" | "+v.pkg, "the README lists %s", v.file)
		assert.Contains(t, string(readme), "| "+string(m[1])+" |", "the README says %s's version", v.pkg)
		ours, err := web.ReadFile("web/vendor/" + v.file)
		require.NoError(t, err)
		theirs, err := os.Open(filepath.Join(modules, v.pkg, v.from))
		if err != nil {
			benchMissing(t, "npm %s is not installed: %v", v.pkg, err)
		}
		b, err := io.ReadAll(theirs)
		theirs.Close()
		require.NoError(t, err)
		assert.True(t, bytes.Equal(ours, b), "web/vendor/%s is not %s@%s's %s", v.file, v.pkg, m[1], v.from)
	}
}

// TestPagePrompts: the MCP servers' prompts the page offers as starters,
// listed and filled in, behind the API's token.
func TestPagePrompts(t *testing.T) {
	srv := upstream(t)
	base, _ := serveInProcess(t, "-base-url", srv.URL, "-model", "agent", "-token", "alice:prompt-token", "-mcp", mcpConfig(t))
	root := strings.TrimSuffix(base, "/v1")
	call := func(method, path, token, body string) (int, string) {
		req, err := http.NewRequest(method, root+path, strings.NewReader(body))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, _ := call(http.MethodGet, "/api/prompts", "", "")
	assert.Equal(t, http.StatusUnauthorized, code, "the prompts need the token")
	code, _ = call(http.MethodGet, "/api/prompts", "alice:prompt-token", "")
	assert.Equal(t, http.StatusUnauthorized, code, "the bearer token is the part after the colon")

	code, body := call(http.MethodGet, "/api/prompts", "prompt-token", "")
	require.Equal(t, http.StatusOK, code, body)
	var list struct {
		Data []struct {
			Server, Name string
			Arguments    []struct {
				Name     string
				Required bool
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	var names []string
	for _, p := range list.Data {
		assert.Equal(t, "everything", p.Server)
		names = append(names, p.Name)
		if p.Name == "args-prompt" {
			require.NotEmpty(t, p.Arguments)
			assert.Equal(t, "city", p.Arguments[0].Name)
			assert.True(t, p.Arguments[0].Required)
		}
	}
	assert.Contains(t, names, "simple-prompt")
	assert.Contains(t, names, "args-prompt")

	code, body = call(http.MethodPost, "/api/prompts/everything/simple-prompt", "prompt-token", `{}`)
	assert.Equal(t, http.StatusOK, code, body)
	assert.JSONEq(t, `{"text": "This is a simple prompt without arguments."}`, body)
	code, body = call(http.MethodPost, "/api/prompts/everything/args-prompt", "prompt-token", `{"arguments": {"city": "Lisbon"}}`)
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "Lisbon")
	code, body = call(http.MethodPost, "/api/prompts/everything/args-prompt", "prompt-token", `{"arguments": {}}`)
	assert.Equal(t, http.StatusBadRequest, code, body)
	assert.Contains(t, body, "args-prompt", "the error names the prompt")
	code, body = call(http.MethodPost, "/api/prompts/nowhere/simple-prompt", "prompt-token", `{}`)
	assert.Equal(t, http.StatusBadRequest, code, body)
	assert.Contains(t, body, "nowhere")
	code, _ = call(http.MethodPost, "/api/prompts/everything/simple-prompt", "prompt-token", `[`)
	assert.Equal(t, http.StatusBadRequest, code)
	code, _ = call(http.MethodGet, "/api/prompts/everything/simple-prompt", "prompt-token", "")
	assert.Equal(t, http.StatusNotFound, code, "a prompt is got with POST")
}
