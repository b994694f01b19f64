// Package mcpoauth authorizes robby's connections to remote MCP servers
// with OAuth 2.1; it complements [robby.MCPServer.WithOAuth], which takes
// the [Handler] it makes:
//
//	h, err := mcpoauth.New("https://mcp.example.com/mcp")
//	if err != nil {
//		log.Fatal(err)
//	}
//	agent, err := robby.New(robby.WithMCP(
//		robby.MCPStreamableHTTP("example", "https://mcp.example.com/mcp").WithOAuth(h)), ...)
//
// The protocol is the go-sdk's (packages auth and oauthex): the server's
// protected-resource metadata and its authorization server's metadata are
// discovered, the client registered (a client ID metadata document, a
// pre-registered client, or dynamic registration), the user's consent
// obtained with a PKCE authorization code, the token refreshed when it
// expires, and more scopes asked for when the server answers 403
// insufficient_scope (step-up). This package adds what a host must bring:
//
//   - the user: the browser opened on the authorization URL (the URL also
//     written, to open by hand), and the redirect received on a loopback
//     listener, http://127.0.0.1:PORT/callback (a random port by default),
//     its state checked, with a timeout; or, for a Go program, a function
//     that does it ([WithOpenURL], [WithAuthorizationCodeFetcher]);
//   - machines: the client_credentials grant ([WithClientCredentials]);
//   - the tokens: kept in memory, or in a [TokenStore], such as the
//     encrypted [FileStore]; never logged.
//
// # Errors
//
// An authorization that fails makes the request fail with an error that
// says why; [ErrDenied] and [ErrTimeout] are the user's refusal and
// absence. A token refused after it was revoked starts a new
// authorization.
package mcpoauth
