package robby

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"

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

// send sends req to model, then, while the error lets it, to the
// fallbacks. The reply records the model that answered.
func (a *Agent) send(ctx context.Context, req *request, model string, onDelta deltaFunc) (*reply, error) {
	r, err := a.sendTo(ctx, req, model, a.core.reqOpts, onDelta)
	if err == nil || len(a.core.fallbacks) == 0 {
		return r, err
	}
	tried, errs := []string{model}, []error{err}
	for _, ep := range a.core.fallbacks {
		larger, ok := switchable(ctx, r, err)
		if !ok {
			break
		}
		if larger && !ep.larger {
			continue
		}
		a.core.log.WarnContext(ctx, "robby: model failed, trying the next", slog.String("failed", tried[len(tried)-1]),
			slog.String("next", ep.model), slog.Any("error", err))
		r, err = a.sendTo(ctx, req, ep.model, ep.opts, onDelta)
		if err == nil {
			return r, nil
		}
		tried, errs = append(tried, ep.model), append(errs, err)
	}
	if len(errs) == 1 {
		return r, err
	}
	return r, &FallbackError{Models: tried, Errs: errs}
}

// sendTo sends req to model with opts.
func (a *Agent) sendTo(ctx context.Context, req *request, model string, opts []option.RequestOption, onDelta deltaFunc) (*reply, error) {
	if err := a.core.checkPriced(ctx, model); err != nil {
		return nil, err
	}
	sent := *req
	head, err := a.core.headFor(req, model)
	if err != nil {
		return nil, err
	}
	sent.head = head
	r, err := a.post(ctx, &sent, model, opts, onDelta)
	if r != nil {
		r.model = model
	}
	return r, err
}

// switchable reports whether another model may be asked after err:
// nothing of the reply arrived, and the error is one another endpoint may
// not meet. A context-length error may go only to a model with a larger
// context.
func switchable(ctx context.Context, r *reply, err error) (larger, ok bool) {
	if ctx.Err() != nil || r != nil {
		return false, false // the caller gave up, or a stream began
	}
	if _, over := contextOverflow(err); over {
		return true, true
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		s := apiErr.StatusCode
		return false, s == http.StatusRequestTimeout || s == http.StatusTooManyRequests || s >= 500
	}
	var netErr net.Error
	return false, errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF)
}

// modelOf returns the model req asks for.
func (c *core) modelOf(req *request) string {
	return cmp.Or(req.model, c.params.Model)
}

// headFor returns req's parameters encoded, naming model: encoded once
// for the agent's model, or the run's, and again for another.
func (c *core) headFor(req *request, model string) ([]byte, error) {
	if model == c.modelOf(req) {
		switch {
		case req.head != nil:
			return req.head, nil
		case req.params == nil:
			return c.head(req.stream)
		}
	}
	p := c.params
	if req.params != nil {
		p = *req.params
	}
	p.Model = model
	return encodeHead(&p, req.stream)
}
