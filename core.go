package robby

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/robby-go/robby/internal/chatwire"
	"github.com/robby-go/robby/internal/llmserver"
)

// core is what an agent and its clones share; nothing in it changes after
// New but the closed state.
type core struct {
	client      openai.Client
	reqOpts     []option.RequestOption
	params      openai.ChatCompletionNewParams // Messages and Tools left empty
	heads       [2]func() ([]byte, error)      // params encoded, plain and streamed
	initial     messages                       // the system prompt and the messages of WithParams
	maxTurns    int
	finalTurn   bool
	log         *slog.Logger
	secrets     secrets    // kept out of errors
	tel         *telemetry // nil if neither traced nor metered
	modelMW     []ModelMiddleware
	guards      *guardSet // nil for none
	fallbacks   []endpoint
	prices      map[string]Price // nil if not given
	unpriced    sync.Map         // models called without a price, logged once
	usageWarned atomic.Bool      // a usage was clamped, logged once
	runBudget   Budget           // WithBudget: of each run
	tools       toolbox
	// answerMode is the AnswerMode typed runs in AnswerAuto settled on;
	// AnswerAuto until a fallback, which means native.
	answerMode atomic.Int32
	typedHeads typedHeads // heads of typed runs' requests: answermode.go

	window     int          // given by WithContextWindow
	learned    atomic.Int64 // the window the provider reported
	discovery  sync.Once
	probe      sync.Once      // asks the server what it is
	srv        llmserver.Info // what it said
	compaction CompactionPolicy
	pinFirst   bool

	name, description string
	handoffs          []Handoff
	returnToRoot      bool
	team              *team // the root's: handoff.go

	closeOnce sync.Once
	closed    chan struct{}
}

// isClosed reports whether Close was called.
func (c *core) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

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

// metered returns ctx with a meter for a run of the agent. The meter starts
// at spent, what the run spent before ([WithOneTurn]). When the agent has no
// budget, metered returns ctx as it is: the run counts in its caller's meter,
// if any.
func (c *core) metered(ctx context.Context, spent Budget) context.Context {
	if c.runBudget == (Budget{}) {
		return ctx
	}
	return context.WithValue(ctx, meterKey{}, &meter{parent: meterOf(ctx), max: c.runBudget, used: spent})
}

// checkPriced returns an error when model has no price while a meter of
// ctx bounds the cost.
func (c *core) checkPriced(ctx context.Context, model string) error {
	m := meterOf(ctx)
	if m == nil {
		return nil
	}
	if _, ok := c.prices[model]; ok {
		return nil
	}
	for b := m; b != nil; b = b.parent {
		if b.max.Cost > 0 {
			return fmt.Errorf("robby: model %q has no price (WithPrices), and the run has a Cost budget", model)
		}
	}
	return nil
}

// price sets u.Cost to what model's call cost, u clamped first. A model
// without a price costs 0, which the log says once per model.
func (c *core) price(ctx context.Context, model string, u *Usage) {
	c.clampUsage(ctx, model, u)
	if c.prices == nil {
		return
	}
	p, ok := c.prices[model]
	if !ok {
		if _, warned := c.unpriced.LoadOrStore(model, true); !warned {
			c.log.WarnContext(ctx, "robby: no price for the model (WithPrices): its calls count no cost", slog.String("model", model))
		}
		return
	}
	u.Cost = min(p.Cost(*u), maxCallCost)
}

// clampUsage keeps a call's usage within what a call can use
// ([Usage.clamped]). The usage is read from the wire or set by a model
// middleware. The provider's numbers inform; they must not break the sums,
// the stores or the budget. The log warns of it once in the agent's life.
func (c *core) clampUsage(ctx context.Context, model string, u *Usage) {
	clamped, changed := u.clamped()
	if !changed {
		return
	}
	if c.usageWarned.CompareAndSwap(false, true) {
		c.log.WarnContext(ctx, "robby: a usage no model call has (negative, not a number, or beyond bounds) was clamped",
			slog.String("model", model), slog.Any("usage", *u))
	}
	*u = clamped
}

// modelOf returns the model req asks for.
func (c *core) modelOf(req *request) string {
	return cmp.Or(req.model, c.params.Model)
}

// headFor returns req's parameters encoded, naming model. They are encoded
// once for the agent's model, or the run's, and again for another.
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
	return chatwire.EncodeHead(&p, req.stream)
}

// head returns the agent's parameters encoded for a request.
func (c *core) head(stream bool) ([]byte, error) {
	if stream {
		return c.heads[1]()
	}
	return c.heads[0]()
}

// requestError wraps what openai-go returned for a failed request. It
// takes out the agent's secrets.
func (c *core) requestError(ctx context.Context, err error, capture *chatwire.Capture) error {
	if ctx.Err() != nil {
		return fmt.Errorf("chat completion: %w", context.Cause(ctx))
	}
	var apiErr *APIError
	if err = endpointError(err, capture); errors.As(err, &apiErr) {
		apiErr.Message = c.secrets.redact(apiErr.Message)
		return c.secrets.wrap(err)
	}
	return c.secrets.wrap(fmt.Errorf("chat completion: %w", err))
}

// budget is the tokens a request may hold in a context window. That is the
// window less room for the answer.
func (c *core) budget(window int) int {
	room := int64(0)
	if v := c.params.MaxCompletionTokens; v.Valid() {
		room = v.Value
	} else if v := c.params.MaxTokens; v.Valid() {
		room = v.Value
	} else {
		room = int64(min(window/4, 4096))
	}
	return max(window/8, window-int(room))
}
