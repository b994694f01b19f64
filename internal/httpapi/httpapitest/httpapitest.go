// Package httpapitest holds what the tests of robby's HTTP endpoints
// share. It sends requests with a token, and reads a stream until a part.
// The scripted model and the agent on it are package agenttest's.
package httpapitest

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Do sends a request. It has a bearer token unless token is empty, and a
// JSON body unless body is. Its body is closed with the test.
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

// ReadUntil reads body until it has held sub. It fails the test if body
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
