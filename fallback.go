package robby

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3/option"
)

// A Fallback is a model tried when the one before it in the list fails in
// a way another model may not: the endpoint cannot be reached, is
// overloaded (429, after openai-go's retries), fails (5xx) or times out
// before the reply's first byte. See [WithFallback].
type Fallback struct {
	// Model is the model asked for. It is required.
	Model string
	// BaseURL is the model's endpoint, checked as [WithBaseURL] checks
	// its URL; empty for the agent's.
	BaseURL string
	// APIKey is the key sent to BaseURL, as "Authorization: Bearer".
	// Empty, it is none when BaseURL is set, and the agent's key when it
	// is not.
	//
	// No credential of the agent's goes to another endpoint: a request to
	// a BaseURL carries none of the headers and query parameters that the
	// agent's client and [WithRequestOptions] set whose names may hold one
	// (holding "auth", "cookie", "key", "token", "secret", "session",
	// "password", "signature" or "credential"): give the fallback's own
	// with APIKey or Header.
	APIKey string
	// Header holds headers sent to this model's endpoint alone, set last:
	// a key that goes in a header of its own (Azure's api-key), say.
	Header http.Header
	// LargerContext marks a model whose context window is larger than
	// the agent's: a request too long for the models before it (a
	// context-length error) is sent to it, before [WithCompaction], if
	// set, shortens it. The other fallbacks are skipped for such a
	// request.
	LargerContext bool
}

// WithFallback gives the models to try, in order, when the agent's model
// fails with a retryable error (see [Fallback]). Each model call starts
// with the agent's model; the next fallback is tried only when the one
// before failed. A streamed reply that began is never switched: an error
// after its first byte is the call's error. An error that another model
// would meet too (a bad request, a refused key) is returned at once.
//
// [Result.Models] says which model answered each turn, and
// [ModelResponse.Model] which answered a call. When every model fails, the
// error is a [*FallbackError] holding each model's error. Given again, it
// adds to the list.
func WithFallback(fallbacks ...Fallback) Option {
	return func(c *config) error {
		for i, f := range fallbacks {
			if f.Model == "" {
				return fmt.Errorf("WithFallback: fallback %d has no Model", i+1)
			}
			if f.BaseURL != "" {
				if err := checkBaseURL(f.BaseURL); err != nil {
					return fmt.Errorf("WithFallback: fallback %q: %w", f.Model, err)
				}
			}
		}
		c.fallbacks = append(c.fallbacks, fallbacks...)
		return nil
	}
}

// A FallbackError reports a model call for which every model failed: the
// agent's and each [Fallback] tried. errors.Is and errors.As see each
// model's error, such as an [*APIError].
type FallbackError struct {
	// Models are the models tried, in order.
	Models []string
	// Errs are their errors, in the same order.
	Errs []error
}

// Error says each model's error.
func (e *FallbackError) Error() string {
	msg := "robby: every model failed"
	for i, m := range e.Models {
		msg += fmt.Sprintf("; %s: %v", m, e.Errs[i])
	}
	return msg
}

// Unwrap returns each model's error.
func (e *FallbackError) Unwrap() []error { return e.Errs }

// An endpoint is where a fallback model is asked.
type endpoint struct {
	model  string
	opts   []option.RequestOption // the agent's, then the fallback's URL and key
	larger bool
}

// endpoints returns the fallbacks of cfg, given the agent's request options.
func endpoints(cfg *config, agentOpts []option.RequestOption) []endpoint {
	eps := make([]endpoint, len(cfg.fallbacks))
	for i, f := range cfg.fallbacks {
		opts := agentOpts[:len(agentOpts):len(agentOpts)]
		if f.BaseURL != "" {
			opts = append(opts, option.WithBaseURL(f.BaseURL), option.WithAPIKey(f.APIKey))
		} else if f.APIKey != "" {
			opts = append(opts, option.WithAPIKey(f.APIKey))
		}
		if f.BaseURL != "" || f.APIKey != "" || len(f.Header) > 0 {
			opts = append(opts, option.WithMiddleware(f.credentials())) // last: it sees the request as sent
		}
		eps[i] = endpoint{model: f.Model, opts: opts, larger: f.LargerContext}
	}
	return eps
}

// What marks a credential in a request, so that one endpoint's never goes
// to another's: a fallback's. (openai-go refuses a redirect off the base
// URL's origin itself.)

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
