package robby

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/openai/openai-go/v3/option"
	"github.com/robby-go/robby/internal/llmserver"
)

// What robby learns of the endpoint, once in the agent's life. That is which
// server answers, and the model's context window.

// server returns what the endpoint's server says of itself, asked once in the
// agent's life. At the server's root, llama.cpp answers GET /props, Ollama
// GET /api/version and vLLM GET /version. Other servers answer 404.
func (c *core) server(ctx context.Context) llmserver.Info {
	c.probe.Do(func() { c.srv = llmserver.Probe(ctx, c.getJSON, c.log) })
	return c.srv
}

// getJSON asks the server's root for path and decodes its JSON answer into v.
// It asks once, without retries. It returns false if it could not.
func (c *core) getJSON(ctx context.Context, path string, v any) bool {
	var body []byte // decoded here: servers differ in the Content-Type they send
	return c.client.Get(ctx, path, nil, &body, c.probeOptions()...) == nil && json.Unmarshal(body, v) == nil
}

// probeOptions are the request options for asking the server about itself.
// They are the agent's, without retries, sent to the server's root.
func (c *core) probeOptions() []option.RequestOption {
	return append(c.reqOpts[:len(c.reqOpts):len(c.reqOpts)], option.WithMaxRetries(0), option.WithMiddleware(llmserver.ToRoot))
}

// learnWindow keeps a window a provider's error gave, unless the agent was
// given one.
func (a *Agent) learnWindow(window int) {
	if window > 0 && a.core.window == 0 {
		a.core.learned.Store(int64(window))
	}
}

// contextWindow returns the model's context window: the one given, or the one
// learned. Else it is what the provider or the table says, asked once in the
// agent's life. It is 0 if unknown.
func (c *core) contextWindow(ctx context.Context) int {
	if c.window > 0 {
		return c.window
	}
	c.discovery.Do(func() {
		if w := c.discoverWindow(ctx); w > 0 {
			c.learned.CompareAndSwap(0, int64(w))
		}
	})
	return int(c.learned.Load())
}

// discoverWindow finds the model's context window in the table of well-known
// models. Else it asks the server: llama.cpp's GET /props or Ollama's POST
// /api/show.
func (c *core) discoverWindow(ctx context.Context) int {
	if w := llmserver.KnownWindow(c.params.Model); w > 0 {
		return w
	}
	srv := c.server(ctx)
	if srv.Window > 0 || srv.Kind != llmserver.Ollama {
		return srv.Window
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var body []byte // decoded here: servers differ in the Content-Type they send
	var show struct {
		Parameters string                     `json:"parameters"`
		ModelInfo  map[string]json.RawMessage `json:"model_info"`
	}
	if c.client.Post(ctx, "api/show", map[string]string{"model": c.params.Model}, &body, c.probeOptions()...) == nil && json.Unmarshal(body, &show) == nil {
		if w := llmserver.OllamaWindow(show.Parameters, show.ModelInfo); w > 0 {
			c.log.DebugContext(ctx, "robby: context window from /api/show", "num_ctx", w)
			return w
		}
	}
	return 0
}

// contextOverflow recognises a provider's context-length error and reads
// the sizes it gives.
func contextOverflow(err error) (llmserver.Overflow, bool) {
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		return llmserver.Overflow{}, false
	}
	body := string(apiErr.body)
	if body == "" {
		body = apiErr.Message
	}
	return llmserver.ParseOverflow(body)
}

// isContextLengthError reports whether err is a provider's context-length
// error, or robby's report of one.
func isContextLengthError(err error) bool {
	if errors.Is(err, ErrContextLength) {
		return true
	}
	_, ok := contextOverflow(err)
	return ok
}
