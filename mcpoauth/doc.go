// Package mcpoauth authorizes robby's connections to remote MCP servers with
// OAuth 2.1. It complements [robby.MCPServer.WithOAuth], which takes the
// [Handler] it makes:
//
//	h, err := mcpoauth.New("https://mcp.example.com/mcp")
//	if err != nil {
//		log.Fatal(err)
//	}
//	agent, err := robby.New(robby.WithMCP(
//		robby.MCPStreamableHTTP("example", "https://mcp.example.com/mcp").WithOAuth(h)), ...)
//
// The protocol is the go-sdk's (packages auth and oauthex). It discovers the
// server's protected-resource metadata and its authorization server's metadata.
// It registers the client: by a client ID metadata document, as a
// pre-registered client, or by dynamic registration. It gets the user's consent
// with a PKCE authorization code, and refreshes the token when it expires. When
// the server answers 403 insufficient_scope, it asks for more scopes (step-up).
// This package adds what a host must bring:
//
//   - the user: the browser is opened on the authorization URL, and the URL is
//     also written, to open by hand. The redirect comes back to a loopback
//     listener, http://127.0.0.1:PORT/callback (a random port by default), its
//     state checked, with a timeout. A Go program may bring a function that
//     does it instead ([WithOpenURL], [WithAuthorizationCodeFetcher]);
//   - machines: the client_credentials grant ([WithClientCredentials]);
//   - the tokens: kept in memory, or in a [TokenStore], such as the encrypted
//     [FileStore]; never logged.
//
// # Errors
//
// An authorization that fails makes the request fail with an error that says
// why. [ErrDenied] and [ErrTimeout] are the user's refusal and absence. A token
// refused after it was revoked starts a new authorization.
package mcpoauth
