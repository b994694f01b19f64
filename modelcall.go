package robby

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/robby-go/robby/internal/chatwire"
)

// One model call, from the loop to the wire, top to bottom. The request is
// fitted into the context window, and compacted and sent again on a
// context-length error. It passes the model middleware and goes to the
// model asked for or its fallbacks. It is posted with its telemetry. The
// reply is assembled in modelreply.go; the bytes are internal/chatwire's.

// sendFitting sends req, turn t's request, after fitting it into the
// budget. If the provider answers with a context-length error, it sends it
// once more, compacted to the size the error gives.
func (a *Agent) sendFitting(ctx context.Context, t *turn, req *request, onDelta deltaFunc) (*reply, error) {
	orig := *req
	f, err := a.fit(ctx, t, req, nil)
	if err != nil {
		return nil, err
	}
	r, err := a.complete(ctx, req, onDelta)
	if err == nil {
		a.remember(req, f, r.usage)
		return r, nil
	}
	over, ok := contextOverflow(err)
	if !ok || r != nil && (r.text.Len() > 0 || r.reasoning.Len() > 0) {
		return r, err
	}
	a.learnWindow(over.Window)
	if a.core.compaction.kind == 0 {
		return r, f.error(over, err)
	}
	a.core.log.InfoContext(ctx, "robby: context-length error, compacting and retrying",
		slog.Int("estimated", f.sent), slog.Int("provider_tokens", over.Tokens), slog.Int("provider_window", over.Window))
	*req = orig
	f, err = a.fit(ctx, t, req, &over)
	if err != nil {
		return nil, err
	}
	r, err = a.complete(ctx, req, onDelta)
	if err == nil {
		a.remember(req, f, r.usage)
		return r, nil
	}
	if over2, ok := contextOverflow(err); ok {
		return r, f.error(over2, err)
	}
	return r, err
}

// complete makes one model call. It sends req, streamed if onDelta is not
// nil, through the model middleware to the model it asks for or its
// fallbacks. It returns the reply, its usage counted in the
// conversation's and in the run's budget, if any. On error the reply holds
// what arrived before it, if anything did.
func (a *Agent) complete(ctx context.Context, req *request, onDelta deltaFunc) (*reply, error) {
	req.stream = onDelta != nil
	m := meterOf(ctx)
	if err := m.start(); err != nil {
		return nil, err
	}
	var r *reply
	var err error
	if a.core.modelMW != nil {
		r, err = a.throughMiddleware(ctx, req, onDelta)
	} else {
		r, err = a.send(ctx, req, a.core.modelOf(req), onDelta)
	}
	if err == nil {
		a.core.clampUsage(ctx, r.model, &r.usage) // a middleware's too
		a.mu.Lock()
		a.usage.add(r.usage)
		a.unsaved.add(r.usage)
		a.mu.Unlock()
		m.spend(r.usage)
	}
	return r, err
}

// throughMiddleware makes a model call through the model middleware. The
// innermost handler sends the request as the middleware left it. A
// streamed reply that no handler sent (an answer from a cache) reaches
// onDelta whole.
func (a *Agent) throughMiddleware(ctx context.Context, req *request, onDelta deltaFunc) (*reply, error) {
	mr := &ModelRequest{
		Model:    a.core.modelOf(req),
		Messages: slices.Concat(req.history[:req.lead], req.system, req.history[req.lead:], req.pending),
		Tools:    slices.Concat(req.tools, req.caller),
		Stream:   req.stream,
	}
	streamed := false
	h := func(ctx context.Context, mr *ModelRequest) (*ModelResponse, error) {
		sent := &request{head: req.head, history: mr.Messages, tools: mr.Tools, stream: req.stream,
			params: req.params, model: req.model}
		d := onDelta
		if d != nil {
			d = func(piece *delta) error {
				streamed = true
				return onDelta(piece)
			}
		}
		r, err := a.send(ctx, sent, mr.Model, d)
		return r.response(), err
	}
	for _, mw := range slices.Backward(a.core.modelMW) {
		next := h
		h = func(ctx context.Context, mr *ModelRequest) (*ModelResponse, error) { return mw(ctx, mr, next) }
	}
	resp, err := h(ctx, mr)
	if resp == nil {
		if err == nil {
			err = errors.New("robby: a model middleware returned neither a response nor an error")
		}
		return nil, err
	}
	r := resp.reply()
	if err == nil && onDelta != nil && !streamed && (resp.Text != "" || resp.Reasoning != "") {
		err = onDelta(&delta{text: resp.Text, reasoning: resp.Reasoning})
	}
	return r, err
}

// reply returns the reply the response stands for.
func (m *ModelResponse) reply() *reply {
	r := &reply{finish: m.FinishReason, usage: m.Usage, model: m.Model}
	r.text.WriteString(m.Text)
	r.reasoning.WriteString(m.Reasoning)
	for _, c := range m.ToolCalls {
		b := &callBuilder{id: c.ID, name: c.Name, extra: m.extras[c.ID]}
		b.args.Write(c.Arguments)
		r.calls = append(r.calls, b)
	}
	return r
}

// send sends req to model, then to the fallbacks while the error lets it.
// The reply records the model that answered.
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

// switchable reports whether another model may be asked after err. That
// needs nothing of the reply to have arrived, and an error another
// endpoint may not meet. A context-length error may go only to a model
// with a larger context.
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

// post sends one chat-completion request for model, whose head is set,
// with opts. It is one attempt at one endpoint.
func (a *Agent) post(ctx context.Context, req *request, model string, opts []option.RequestOption, onDelta deltaFunc) (r *reply, err error) {
	ctx, op := a.core.tel.startChat(ctx, model, req)
	defer func() {
		if err == nil {
			a.core.price(ctx, model, &r.usage) // before the span ends
		}
		op.end(ctx, r, err)
	}()
	if a.core.log.Enabled(ctx, slog.LevelDebug) { // its attributes cost four allocations
		a.core.log.DebugContext(ctx, "robby: request", slog.String("model", model),
			slog.Int("messages", len(req.history)+len(req.system)+len(req.pending)),
			slog.Int("tools", len(req.tools)+len(req.caller)), slog.Bool("stream", req.stream))
	}
	ctx, capture := chatwire.WithCapture(ctx)
	// The body goes as a *bytes.Reader, which openai-go rewinds for a retry
	// (a []byte it would copy into a buffer first).
	if onDelta == nil {
		var body []byte
		if err := a.core.client.Post(ctx, "chat/completions", bytes.NewReader(req.body()), &body, opts...); err != nil {
			return nil, a.core.requestError(ctx, err, capture)
		}
		op.meta(body)
		res, err := chatwire.DecodeResponse(body)
		if err != nil {
			return nil, a.core.requestError(ctx, err, capture)
		}
		return replyOf(res)
	}
	var res *http.Response
	if err := a.core.client.Post(ctx, "chat/completions", bytes.NewReader(req.body()), &res, opts...); err != nil {
		return nil, a.core.requestError(ctx, err, capture)
	}
	events := ssestream.NewDecoder(res)
	defer events.Close()
	r = new(reply)
	var (
		chunk  chatwire.Response
		chunks int
		d      delta
	)
	for events.Next() {
		ev := events.Event()
		if bytes.HasPrefix(ev.Data, []byte("[DONE]")) {
			break
		}
		op.meta(ev.Data)
		if err := chatwire.DecodeChunk(ev, &chunk); err != nil {
			return r, a.core.requestError(ctx, err, capture)
		}
		chunks++
		d.text, d.reasoning = r.addChunk(&chunk)
		d.args = r.args
		if d.text == "" && d.reasoning == "" && len(d.args) == 0 {
			continue
		}
		if err := onDelta(&d); err != nil {
			return r, err
		}
	}
	if err := events.Err(); err != nil {
		return r, a.core.requestError(ctx, err, capture)
	}
	switch {
	case chunks == 0:
		// A proxy may answer with a plain response, or a page.
		return r, fmt.Errorf("%w: no chunk came (Content-Type %q)", ErrIncompleteStream, res.Header.Get("Content-Type"))
	case r.finish == "":
		return r, ErrIncompleteStream
	}
	return r, nil
}

// A request is one chat-completion request, from its encoded parts.
type request struct {
	head    []byte            // the parameters: a JSON object without its closing brace
	history []json.RawMessage // the conversation
	lead    int               // how many system messages open the history
	system  []json.RawMessage // the run's own system message (WithRunSystem), after those
	pending []json.RawMessage // messages sent with it, not in it yet
	tools   []json.RawMessage
	caller  []json.RawMessage // the caller's own tools (WithCallerTools)
	stream  bool
	model   string                          // the model asked for, if not the agent's
	params  *openai.ChatCompletionNewParams // the run's, which head encodes; nil for the agent's
}

// body returns the request's JSON.
func (r *request) body() []byte {
	n := len(r.head) + len(`,"messages":[],"tools":[],"stream":true}`)
	for _, parts := range [...][]json.RawMessage{r.history, r.system, r.pending, r.tools, r.caller} {
		for _, p := range parts {
			n += len(p) + 1
		}
	}
	b := make([]byte, 0, n)
	b = append(b, r.head...)
	if len(r.head) > 1 {
		b = append(b, ',')
	}
	b = append(b, `"messages":`...)
	b = chatwire.AppendArray(b, r.history[:r.lead], r.system, r.history[r.lead:], r.pending)
	if len(r.tools)+len(r.caller) > 0 {
		b = append(b, `,"tools":`...)
		b = chatwire.AppendArray(b, r.tools, r.caller)
	}
	if r.stream {
		b = append(b, `,"stream":true`...)
	}
	return append(b, '}')
}
