package robby

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/oauth2"
)

// staticOAuth hands out one token and never authorizes.
type staticOAuth struct{ token string }

func (s staticOAuth) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: s.token, TokenType: "Bearer"}), nil
}

func (staticOAuth) Authorize(context.Context, *http.Request, *http.Response) error { return nil }

func TestWithOAuthIsForStreamableHTTP(t *testing.T) {
	_, err := New(WithModel("m"), WithMCP(MCPSSE("legacy", "http://127.0.0.1:1/sse").WithOAuth(staticOAuth{"t"})))
	assert.ErrorContains(t, err, `MCP server "legacy": OAuth is for streamable HTTP servers only`)
}
