package main

import (
	"bytes"
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
	for _, path := range []string{"/", "/assets/app.js", "/assets/app.css", "/assets/vendor/marked.esm.js", "/assets/vendor/purify.es.mjs"} {
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
