// Package httpapitest holds what the tests of robby's HTTP endpoints
// share: an agent on a scripted model, a store, a request with a token.
package httpapitest

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/sqlitestore"
)

// NewAgent builds an agent on srv with retries off, closed with the test.
func NewAgent(t *testing.T, srv *robbytest.Server, opts ...robby.Option) *robby.Agent {
	t.Helper()
	base := []robby.Option{robby.WithBaseURL(srv.URL), robby.WithAPIKey(""), robby.WithModel("test-model"),
		robby.WithRequestOptions(option.WithMaxRetries(0))}
	a, err := robby.New(append(base, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	return a
}

// NewServer starts a scripted model giving replies, closed with the test.
func NewServer(t *testing.T, replies ...robbytest.Reply) *robbytest.Server {
	srv := robbytest.NewServer()
	t.Cleanup(srv.Close)
	srv.Reply(replies...)
	return srv
}

// NewStore opens a SQLite store in the test's directory.
func NewStore(t *testing.T) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "chats.db"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

// AddTool adds two numbers.
var AddTool = robby.NewTool("add", "Adds two numbers", func(_ context.Context, in addArgs) (int, error) {
	return in.A + in.B, nil
})

// Do sends a request, with a bearer token unless token is empty, and a JSON
// body unless body is. Its body is closed with the test.
func Do(t *testing.T, url, method, token, body string) *http.Response {
	t.Helper()
	return DoContext(t.Context(), t, url, method, token, body)
}

// DoContext is [Do] with the request's context.
func DoContext(ctx context.Context, t *testing.T, url, method, token, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// ReadUntil reads body until it has held sub, and fails the test if it
// ends first.
func ReadUntil(t *testing.T, body interface{ Read([]byte) (int, error) }, sub string) {
	t.Helper()
	buf := make([]byte, 512)
	for got := ""; !strings.Contains(got, sub); {
		n, err := body.Read(buf)
		require.NoError(t, err)
		got += string(buf[:n])
	}
}
