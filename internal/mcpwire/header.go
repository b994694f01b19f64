package mcpwire

// The headers of a remote MCP server go to its own origin only.

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/propagation"
)

// Origin returns the scheme and host of a URL, or "" if it is none. ws and wss
// read as http and https.
func Origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	switch scheme {
	case "ws":
		scheme = "http"
	case "wss":
		scheme = "https"
	}
	return scheme + "://" + strings.ToLower(u.Host)
}

// HeaderTransport adds fixed headers to every request to a server's origin. If
// Traced, it adds the W3C trace context of its context too. A request elsewhere
// (a redirect to another host) gets none of the headers: they may hold the
// server's credentials.
type HeaderTransport struct {
	Header http.Header
	Origin string // the server's, as [Origin] gives it
	Next   http.RoundTripper
	Traced bool
}

// RoundTrip sends req through Next with the headers it may carry.
func (t HeaderTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if Origin(req.URL.String()) == t.Origin {
		for k, v := range t.Header {
			req.Header[k] = slices.Clone(v)
		}
	}
	if t.Traced {
		propagation.TraceContext{}.Inject(req.Context(), propagation.HeaderCarrier(req.Header))
	}
	return t.Next.RoundTrip(req)
}
