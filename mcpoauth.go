package robby

import "github.com/modelcontextprotocol/go-sdk/auth"

// WithOAuth authorizes the requests to a streamable-HTTP server with h, the
// go-sdk's OAuth 2.1 client: it adds the token h gives to every request
// and, when the server answers 401 or 403, has h run the authorization
// flow (protected-resource and authorization-server metadata discovery,
// client ID metadata document, pre-registered client or dynamic client
// registration, PKCE authorization code, token refresh, step-up to the
// scopes a 403 insufficient_scope asks for), then retries once.
//
// Package mcpoauth makes h for a host: the browser opened on the
// authorization URL with a loopback redirect (or a function of the
// program's), pre-registered clients, client credentials for machines,
// tokens kept in memory or in a store (an encrypted file). Any
// auth.OAuthHandler works, such as the go-sdk's
// auth.NewAuthorizationCodeHandler. Tokens live in h, never in robby's
// logs or errors. New reports an error for a server of another transport.
func (s MCPServer) WithOAuth(h auth.OAuthHandler) MCPServer {
	s.oauth = h
	return s
}
