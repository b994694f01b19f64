package robby

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3/option"
)

// A Fallback is a model tried when the one before it in the list fails in a
// way another model may not. That is when the endpoint cannot be reached, is
// overloaded (429, after openai-go's retries), fails (5xx) or times out
// before the reply's first byte. See [WithFallback].
type Fallback struct {
	// Model is the model asked for. It is required.
	Model string
	// BaseURL is the model's endpoint, checked as [WithBaseURL] checks its
	// URL. Empty means the agent's.
	BaseURL string
	// APIKey is the key sent to BaseURL, as "Authorization: Bearer". If
	// empty, no key is sent when BaseURL is set, and the agent's key is sent
	// when it is not.
	//
	// No credential of the agent's goes to another endpoint. The agent's
	// client and [WithRequestOptions] may set headers and query parameters
	// whose names may hold one. Those are names holding "auth", "cookie",
	// "key", "token", "secret", "session", "password", "signature" or
	// "credential". A request to a BaseURL carries none of them. Give the
	// fallback's own with APIKey or Header.
	APIKey string
	// Header holds headers sent to this model's endpoint alone, set last. An
	// example is a key that goes in a header of its own (Azure's api-key).
	Header http.Header
	// LargerContext marks a model whose context window is larger than the
	// agent's. A request too long for the models before it (a context-length
	// error) is sent to it. That happens before [WithCompaction], if set,
	// shortens the request. The other fallbacks are skipped for such a
	// request.
	LargerContext bool
}

// WithFallback gives the models to try, in order, when the agent's model
// fails with a retryable error (see [Fallback]). Each model call starts with
// the agent's model. The next fallback is tried only when the one before
// failed. A streamed reply that began is never switched: an error after its
// first byte is the call's error. An error that another model would meet too
// (a bad request, a refused key) is returned at once.
//
// [Result.Models] says which model answered each turn, and
// [ModelResponse.Model] which answered a call. When every model fails, the
// error is a [*FallbackError] holding each model's error. Given again, it
// adds to the list.
func WithFallback(fallbacks ...Fallback) Option {
	return func(c *config) error {
		for i, f := range fallbacks {
			if f.Model == "" {
				return fmt.Errorf("robby: WithFallback: fallback %d has no Model", i+1)
			}
			if f.BaseURL != "" {
				if err := checkBaseURL(fmt.Sprintf("WithFallback: fallback %q", f.Model), f.BaseURL); err != nil {
					return err
				}
			}
		}
		c.fallbacks = append(c.fallbacks, fallbacks...)
		return nil
	}
}

// A FallbackError reports a model call for which every model failed: the
// agent's and each [Fallback] tried. errors.Is and errors.As see each model's
// error, such as an [*APIError].
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

// What marks a credential in a request, so that one endpoint's never goes to
// another's: a fallback's. openai-go itself refuses a redirect off the base
// URL's origin.

// credentialWords are the words in the name of a header or query parameter
// that carries a credential. They match Authorization, Cookie, api-key,
// x-api-key, x-goog-api-key, and the names of a token, a session or a
// signature.
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
// credentials. On another endpoint, it removes those the agent's options or
// client set: they are for the agent's endpoint. Then it sets f's key and
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
