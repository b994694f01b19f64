package mcpoauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/mcpoauth"
)

// protected is a go-sdk streamable-HTTP MCP server that needs a bearer
// token of its authorization server with the scope "read"; its tool "save"
// needs "write" too, asked for with a 403 insufficient_scope (step-up).
type protected struct {
	url string // the MCP endpoint, the tokens' resource
	as  *authServer
}

func newProtected(t *testing.T) *protected {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p := &protected{url: srv.URL + "/mcp"}
	p.as = newAuthServer(t, p.url, "read", "write")
	prm := srv.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("GET /.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(
		&oauthex.ProtectedResourceMetadata{Resource: p.url, AuthorizationServers: []string{p.as.URL}, ScopesSupported: []string{"read"}}))

	server := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	// A session whose client lost its grant cannot end itself with an
	// authorized DELETE: the server ends what is left.
	t.Cleanup(func() {
		for ss := range server.Sessions() {
			ss.Close()
		}
	})
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "Who the token is for"},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			info := req.Extra.TokenInfo
			// Sorted: the go-sdk's union of scopes has no order.
			return textResult(fmt.Sprintf("%s with %s", info.UserID, strings.Join(slices.Sorted(slices.Values(info.Scopes)), " "))), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "save", Description: "Needs the write scope"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return textResult("saved"), nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	mux.Handle("/mcp", auth.RequireBearerToken(p.as.verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: prm, Scopes: []string{"read"}})(stepUp(handler, prm)))
	return p
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// stepUp refuses a call of "save" made with a token without "write".
func stepUp(next http.Handler, prm string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		json.Unmarshal(body, &msg)
		if msg.Method == "tools/call" && msg.Params.Name == "save" && !slices.Contains(auth.TokenInfoFromContext(r.Context()).Scopes, "write") {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="read write", resource_metadata=%q`, prm))
			http.Error(w, "insufficient scope", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// browser plays the user's browser: it follows the authorization URL and
// the redirect to the loopback listener, as a browser would, whatever the
// answers.
func browser(_ context.Context, authURL string) error {
	resp, err := http.Get(authURL)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// mapStore is a TokenStore a program could write: a map.
type mapStore struct {
	mu     sync.Mutex
	grants map[string]mcpoauth.Grant
	saves  int
}

func (s *mapStore) Load(_ context.Context, server string) (*mcpoauth.Grant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.grants[server]
	if !ok {
		return nil, nil
	}
	return &g, nil
}

func (s *mapStore) Save(_ context.Context, server string, g *mcpoauth.Grant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.grants == nil {
		s.grants = map[string]mcpoauth.Grant{}
	}
	s.grants[server] = *g
	s.saves++
	return nil
}

func (s *mapStore) get(server string) mcpoauth.Grant {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grants[server]
}

// connect makes an agent that reaches p through h.
func connect(t *testing.T, p *protected, h *mcpoauth.Handler, opts ...robby.Option) *robby.Agent {
	t.Helper()
	a, err := newAgent(t, p, h, opts...)
	require.NoError(t, err)
	return a
}

// newAgent makes an agent that reaches p through h, or the error of its
// connection.
func newAgent(t *testing.T, p *protected, h *mcpoauth.Handler, opts ...robby.Option) (*robby.Agent, error) {
	a, err := robby.New(append([]robby.Option{robby.WithModel("m"),
		robby.WithMCP(robby.MCPStreamableHTTP("p", p.url).WithOAuth(h).WithConnectTimeout(20 * time.Second))}, opts...)...)
	if err == nil {
		t.Cleanup(func() { a.Close() })
	}
	return a, err
}

// call calls a tool of the agent and returns its output or error.
func call(t *testing.T, a *robby.Agent, name string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	results, err := a.ExecuteToolCalls(ctx, []robby.ToolCall{{ID: "c", Name: name, Arguments: "{}"}})
	require.NoError(t, err)
	return results[0].Output, results[0].Err
}

// TestAuthorizationCode follows one user through the life of a grant: the
// authorization in the browser (dynamic registration, PKCE), the token
// refreshed after it expired, more scopes on a 403 insufficient_scope, and
// the refusal once the grant is revoked — with no token ever logged.
func TestAuthorizationCode(t *testing.T) {
	p := newProtected(t)
	p.as.setLifetime(2 * time.Second)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	store := &mapStore{}
	h, err := mcpoauth.New(p.url, mcpoauth.WithOpenURL(browser), mcpoauth.WithTokenStore(store), mcpoauth.WithLogger(logger))
	require.NoError(t, err)

	a := connect(t, p, h, robby.WithLogger(logger))
	out, err := call(t, a, "whoami")
	require.NoError(t, err)
	assert.Equal(t, "alice with offline_access read", out)
	assert.Equal(t, 1, p.as.count("register"))
	assert.Equal(t, 1, p.as.count("authorize"))
	assert.Equal(t, 1, p.as.count("authorization_code"))
	first := store.get(p.url)
	require.NotEmpty(t, first.Token.RefreshToken)

	// Every token issued so far has expired: the next call refreshes, and
	// no one is asked again.
	time.Sleep(2500 * time.Millisecond)
	_, err = call(t, a, "whoami")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, p.as.count("refresh_token"), 1)
	assert.Equal(t, 1, p.as.count("authorize"))
	assert.NotEqual(t, first.Token.AccessToken, store.get(p.url).Token.AccessToken, "the refreshed token is stored")

	// Step-up: "save" needs write; the user is asked for it, once, and the
	// call retried.
	out, err = call(t, a, "save")
	require.NoError(t, err, logs.String())
	assert.Equal(t, "saved", out)
	assert.Equal(t, 2, p.as.count("authorize"))
	assert.ElementsMatch(t, []string{"read", "write", "offline_access"}, store.get(p.url).Scopes)
	assert.Equal(t, 2, p.as.count("register"), "registered again, as the authorization server may have changed")

	// The user revokes the grant and refuses the new authorization.
	resp, err := http.PostForm(p.as.URL+"/revoke", url.Values{"token": {store.get(p.url).Token.RefreshToken},
		"client_id": {store.get(p.url).ClientID}})
	require.NoError(t, err)
	resp.Body.Close()
	p.as.setDeny(true)
	_, err = call(t, a, "whoami")
	require.Error(t, err)
	assert.ErrorContains(t, err, "authorization refused: access_denied: the user said no")
	assert.ErrorIs(t, err, mcpoauth.ErrDenied)

	p.as.mu.Lock()
	issued := slices.Collect(func(yield func(string) bool) {
		for tok := range p.as.tokens {
			yield(tok)
		}
	})
	p.as.mu.Unlock()
	require.NotEmpty(t, logs.String())
	assert.Contains(t, logs.String(), "mcpoauth: authorizing")
	for _, tok := range append(issued, first.Token.AccessToken, first.Token.RefreshToken) {
		assert.NotContains(t, logs.String(), tok, "a token was logged")
	}
}
