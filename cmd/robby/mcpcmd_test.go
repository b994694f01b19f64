package main

import (
	"bytes"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// answerText scripts a model that answers each request with the next text.
func answerText(t *testing.T, answers ...string) *robbytest.Server {
	t.Helper()
	replies := make([]robbytest.Reply, len(answers))
	for i, a := range answers {
		replies[i] = robbytest.Text(a)
	}
	return upstream(t, replies...)
}

func askTool(t *testing.T, cs *mcp.ClientSession, prompt string) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"prompt": prompt}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res.Content)
	require.Len(t, res.Content, 1)
	return res.Content[0].(*mcp.TextContent).Text
}

func TestMCPOverStdio(t *testing.T) {
	srv := answerText(t, "Answer over stdio.")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(t.Context(), []string{"mcp", "-base-url", srv.URL, "-model", "m", "-name", "stdio-agent"}, inR, outW, stderr)
		outW.Close()
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(t, err, stderr.String())
	assert.Equal(t, "stdio-agent", cs.InitializeResult().ServerInfo.Name)
	assert.Equal(t, "Answer over stdio.", askTool(t, cs, "hello"))
	assert.Equal(t, "hello", srv.Requests()[0].Messages[0].Content)
	require.NoError(t, cs.Close())
	select {
	case err := <-done:
		assert.NoError(t, err, "the server ends when its input does")
	case <-time.After(5 * time.Second):
		t.Fatal("robby mcp did not stop when stdin closed")
	}
	assert.Contains(t, stderr.String(), "as MCP tool ask on stdio")
}

// mcpHTTPInProcess runs `robby mcp -http` with args on a free port until the
// test ends, and returns its endpoint.
func mcpHTTPInProcess(t *testing.T, args ...string) string {
	t.Helper()
	url, _ := runInProcess(t, regexp.MustCompile(`on (http://\S+/mcp)`),
		append([]string{"mcp", "-http", "-addr", "127.0.0.1:0"}, args...)...)
	return url
}

type bearer string

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(req)
}

func TestMCPOverHTTP(t *testing.T) {
	srv := answerText(t, "Answer over HTTP.")
	t.Setenv("ROBBY_TOKEN", "from-env")
	url := mcpHTTPInProcess(t, "-base-url", srv.URL, "-model", "m")

	resp, err := http.Post(url, "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "ROBBY_TOKEN is required")

	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer("from-env")}}, nil)
	require.NoError(t, err)
	defer cs.Close()
	assert.Equal(t, "Answer over HTTP.", askTool(t, cs, "hello"))
}

func TestMCPRefusesAnOpenAddressWithoutToken(t *testing.T) {
	t.Setenv("ROBBY_TOKEN", "")
	err := run(t.Context(), []string{"mcp", "-http", "-addr", "0.0.0.0:0"}, nil, io.Discard, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-token")
	assert.Contains(t, err.Error(), "ROBBY_TOKEN")
}

// TestTokenFlagsOneMeaning: serve and mcp share one token flag group, with
// one help: -token USER:TOKEN repeated, -token-file, ROBBY_TOKEN when none
// is given, -insecure-no-token. robby mcp -http accepts each token given.
func TestTokenFlagsOneMeaning(t *testing.T) {
	flagsOf := func(name string) map[string]string {
		c, _ := newCommand(lookup(name), nil, io.Discard, io.Discard)
		usage := map[string]string{}
		c.fs.VisitAll(func(f *flag.Flag) { usage[f.Name] = f.Usage + " default " + f.DefValue })
		return usage
	}
	serve, mcpFlags := flagsOf("serve"), flagsOf("mcp")
	for _, name := range []string{"token", "token-file", "insecure-no-token"} {
		assert.NotEmpty(t, serve[name], name)
		assert.Equal(t, serve[name], mcpFlags[name], name)
	}

	srv := answerText(t, "Answer.", "Answer.")
	t.Setenv("ROBBY_TOKEN", "from-env")
	file := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(file, []byte("# users\ncarol:c-token\n"), 0o600))
	url := mcpHTTPInProcess(t, "-base-url", srv.URL, "-model", "m", "-token", "alice:a-token", "-token", "b-token", "-token-file", file)
	for _, token := range []string{"from-env", "wrong"} {
		req, err := http.NewRequest(http.MethodPost, url, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s: ROBBY_TOKEN counts only when no token is given", token)
	}
	for _, token := range []string{"a-token", "c-token"} {
		client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url,
			HTTPClient: &http.Client{Transport: bearer(token)}}, nil)
		require.NoError(t, err)
		assert.Equal(t, "Answer.", askTool(t, cs, "hello"), token)
		cs.Close()
	}

	var stderr bytes.Buffer
	err := run(t.Context(), []string{"mcp", "-token", "x"}, nil, io.Discard, &stderr)
	assert.Equal(t, 2, exitCode(err, &stderr))
	assert.Contains(t, stderr.String(), "-token works with -http only")
}
