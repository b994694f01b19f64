package mcpconfig_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/mcpconfig"
	"github.com/robby-go/robby/mcpoauth"
)

// clientCredentialsServer is a go-sdk MCP server behind a bearer token that
// its authorization server issues for the client_credentials grant; it
// records the client that authenticated.
func clientCredentialsServer(t *testing.T, client *[2]string) string {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mcpURL := srv.URL + "/mcp"
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(&oauthex.AuthServerMeta{Issuer: srv.URL, AuthorizationEndpoint: srv.URL + "/authorize",
			TokenEndpoint: srv.URL + "/token", ResponseTypesSupported: []string{"code"},
			GrantTypesSupported: []string{"client_credentials"}, TokenEndpointAuthMethodsSupported: []string{"client_secret_basic"},
			CodeChallengeMethodsSupported: []string{"S256"}})
	})
	prm := srv.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("GET /.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(
		&oauthex.ProtectedResourceMetadata{Resource: mcpURL, AuthorizationServers: []string{srv.URL}}))
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, _ := r.BasicAuth()
		client[0], client[1] = id, secret
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "tok", "token_type": "Bearer", "expires_in": 3600})
	})
	server := mcp.NewServer(&mcp.Implementation{Name: "machine", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "ping"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
	})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token != "tok" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prm})(
		mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)))
	return mcpURL
}

// TestOAuthFromTheFile: a machine's client, its secret in the environment,
// authorizes with the client_credentials grant and reaches the tools.
func TestOAuthFromTheFile(t *testing.T) {
	var client [2]string
	url := clientCredentialsServer(t, &client)
	t.Setenv("CI_SECRET", "s3cret")
	servers, err := mcpconfig.Parse([]byte(`{"mcpServers": {"ci": {"url": "` + url + `",
		"oauth": {"grantType": "client_credentials", "clientId": "ci-bot", "clientSecret": "${CI_SECRET}"}}}}`))
	require.NoError(t, err)
	a, err := robby.New(robby.WithModel("m"), robby.WithMCP(servers...))
	require.NoError(t, err)
	defer a.Close()
	assert.True(t, slices.ContainsFunc(a.Tools(), func(tl robby.Tool) bool { return tl.Name() == "ping" }))
	assert.Equal(t, [2]string{"ci-bot", "s3cret"}, client)
}

// TestWithOAuth: the handler options of the program apply to every
// streamable HTTP server; here, a machine's credentials.
func TestWithOAuth(t *testing.T) {
	var client [2]string
	url := clientCredentialsServer(t, &client)
	servers, err := mcpconfig.Parse([]byte(`{"mcpServers": {"a": {"url": "`+url+`"}}}`),
		mcpconfig.WithOAuth(mcpoauth.WithClientCredentials("bot", "pw")))
	require.NoError(t, err)
	a, err := robby.New(robby.WithModel("m"), robby.WithMCP(servers...))
	require.NoError(t, err)
	defer a.Close()
	assert.Equal(t, [2]string{"bot", "pw"}, client)
}

func TestOAuthFieldErrors(t *testing.T) {
	for _, tc := range []struct{ server, want string }{
		{`{"url": "https://x/mcp", "oauth": {"clientId": "a"}, "auth": {"CLIENT_ID": "a"}}`, `both "oauth" and "auth" are set`},
		{`{"url": "https://x/mcp", "oauth": "yes"}`, `"oauth" must be an object`},
		{`{"url": "https://x/mcp", "oauth": {"authServerMetadataUrl": "https://as"}}`,
			`"oauth" has no field "authServerMetadataUrl": robby reads callbackPort, clientId, clientSecret, grantType, scopes`},
		{`{"url": "https://x/mcp", "auth": {"clientId": "a"}}`, `"auth" has no field "clientId": robby reads CLIENT_ID, CLIENT_SECRET, scopes`},
		{`{"url": "https://x/mcp", "oauth": {"scopes": "read"}}`, `"oauth": "scopes" must be an array of strings`},
		{`{"url": "https://x/mcp", "oauth": {"callbackPort": "80"}}`, `"oauth": "callbackPort" must be a port number`},
		{`{"url": "https://x/mcp", "oauth": {"callbackPort": 99999}}`, `port must be in 1-65535`},
		{`{"url": "https://x/mcp", "oauth": {"grantType": "password"}}`, `unknown "grantType" "password"`},
		{`{"url": "https://x/mcp", "oauth": {"grantType": "client_credentials", "clientId": "a"}}`, `the client ID and secret are both required`},
		{`{"url": "https://x/mcp", "oauth": {"clientSecret": "s"}}`, `a client secret but no client ID`},
		{`{"url": "https://x/mcp", "oauth": {"clientId": "${MCPCONFIG_UNSET_ID}"}}`, `"oauth" client ID: `},
		{`{"url": "https://x/sse", "oauth": {}}`, `"oauth" is for streamable HTTP servers, not sse`},
	} {
		_, err := mcpconfig.Parse([]byte(`{"mcpServers": {"s": ` + tc.server + `}}`))
		assert.ErrorContains(t, err, tc.want, tc.server)
	}
}
