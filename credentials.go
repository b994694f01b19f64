package robby

// What marks a credential in a request, so that one endpoint's never goes
// to another's: a fallback's. (openai-go refuses a redirect off the base
// URL's origin itself.)

import (
	"net/http"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3/option"
)

// credentialWords are what the name of a header or query parameter that
// carries a credential holds: Authorization, Cookie, api-key, x-api-key,
// x-goog-api-key, a token, a session, a signature.
var credentialWords = [...]string{"auth", "cookie", "key", "token", "secret", "session", "password", "signature", "credential"}

// isCredential reports whether a header or query parameter of this name
// may carry a credential.
func isCredential(name string) bool {
	name = strings.ToLower(name)
	for _, w := range credentialWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// dropCredentials removes from req every header and query parameter that
// may carry a credential.
func dropCredentials(req *http.Request) {
	for k := range req.Header {
		if isCredential(k) {
			delete(req.Header, k)
		}
	}
	if req.URL.RawQuery == "" {
		return
	}
	q := req.URL.Query()
	n := len(q)
	for k := range q {
		if isCredential(k) {
			delete(q, k)
		}
	}
	if len(q) < n {
		req.URL.RawQuery = q.Encode()
	}
}

// credentials returns the middleware that gives a request to f its own
// credentials: on another endpoint, none of those the agent's options or
// client set (they are for the agent's endpoint), then f's key and
// headers. It is the last middleware, so it sees the request as it goes.
func (f Fallback) credentials() option.Middleware {
	header := f.Header.Clone()
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		if f.BaseURL != "" {
			dropCredentials(req)
		}
		if f.APIKey != "" {
			req.Header.Set("Authorization", "Bearer "+f.APIKey)
		}
		for k, v := range header {
			req.Header[k] = slices.Clone(v)
		}
		return next(req)
	}
}
