package robby

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// A deltaFunc receives what each streamed chunk added to the reply; an
// error it returns stops the stream.
type deltaFunc func(d *delta) error

// A delta is what one streamed chunk added to a reply.
type delta struct {
	text, reasoning string
	args            []argDelta // the pieces of calls' arguments
}

// An argDelta is a piece of a call's arguments.
type argDelta struct {
	call     *callBuilder
	fragment string
}

// complete makes one model call: it sends req, streamed if onDelta is not
// nil, through the model middleware to the model it asks for or its
// fallbacks, and returns the reply, its usage counted in the
// conversation's and in the run's budget, if any. On error the reply holds what arrived before it, if
// anything did.
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

// post sends one chat-completion request for model, whose head is set,
// with opts: one attempt at one endpoint.
func (a *Agent) post(ctx context.Context, req *request, model string, opts []option.RequestOption, onDelta deltaFunc) (r *reply, err error) {
	ctx, op := a.core.tel.startChat(ctx, model, req)
	defer func() {
		if err == nil {
			a.core.price(ctx, model, &r.usage) // before the span ends
		}
		op.end(ctx, r, err)
	}()
	a.core.log.DebugContext(ctx, "robby: request", slog.String("model", model),
		slog.Int("messages", len(req.history)+len(req.system)+len(req.pending)),
		slog.Int("tools", len(req.tools)+len(req.caller)), slog.Bool("stream", req.stream))
	ctx, capture := withCapture(ctx)
	if onDelta == nil {
		var body []byte
		if err := a.core.client.Post(ctx, "chat/completions", req.body(), &body, opts...); err != nil {
			return nil, a.core.requestError(ctx, err, capture)
		}
		op.meta(body)
		res, err := decodeResponse(body)
		if err != nil {
			return nil, a.core.requestError(ctx, err, capture)
		}
		return replyOf(res)
	}
	var res *http.Response
	if err := a.core.client.Post(ctx, "chat/completions", req.body(), &res, opts...); err != nil {
		return nil, a.core.requestError(ctx, err, capture)
	}
	events := ssestream.NewDecoder(res)
	defer events.Close()
	r = new(reply)
	var (
		chunk  apiResponse
		chunks int
		d      delta
	)
	for events.Next() {
		ev := events.Event()
		if bytes.HasPrefix(ev.Data, []byte("[DONE]")) {
			break
		}
		op.meta(ev.Data)
		if err := decodeChunk(ev, &chunk); err != nil {
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

// requestError wraps what openai-go returned for a failed request, with
// the agent's secrets taken out.
func (c *core) requestError(ctx context.Context, err error, capture *errorCapture) error {
	if ctx.Err() != nil {
		return fmt.Errorf("robby: chat completion: %w", context.Cause(ctx))
	}
	var apiErr *APIError
	if err = endpointError(err, capture); errors.As(err, &apiErr) {
		apiErr.Message = c.secrets.redact(apiErr.Message)
		return c.secrets.wrap(err)
	}
	return c.secrets.wrap(fmt.Errorf("robby: chat completion: %w", err))
}

// request starts a request of the agent's conversation, offering tools.
func (a *Agent) request(tools []json.RawMessage) (*request, error) {
	history, lead, err := a.encodedHistory()
	if err != nil {
		return nil, err
	}
	return &request{history: history, lead: lead, tools: tools}, nil
}

// ChatCompletion asks the model to answer the conversation, without tools,
// adds its answer to the conversation and returns it.
func (a *Agent) ChatCompletion(ctx context.Context) (string, error) {
	return a.chat(ctx, nil)
}

// ChatCompletionStream is [Agent.ChatCompletion] with the answer streamed:
// fn gets each piece of text as it arrives. An error from fn stops the
// stream and is returned. On any error, the text received so far is
// returned with it and the conversation is left as it was.
func (a *Agent) ChatCompletionStream(ctx context.Context, fn func(delta string) error) (string, error) {
	return a.chat(ctx, func(d *delta) error {
		if d.text == "" {
			return nil
		}
		return fn(d.text)
	})
}

func (a *Agent) chat(ctx context.Context, onDelta deltaFunc) (string, error) {
	release, err := a.acquire(ctx)
	if err != nil {
		return "", err
	}
	defer release()
	var r *reply
	req, err := a.request(nil)
	if err == nil {
		r, err = a.sendFitting(ctx, req, onDelta, 0, nil)
	}
	if err != nil {
		if r != nil {
			return r.text.String(), err
		}
		return "", err
	}
	var ms messages
	ms.add(r.message(nil))
	a.addMessages(ms)
	return r.text.String(), nil
}

// ToolsCompletion offers the tools to the model and returns the calls it
// asks for, none if it answered with text. The assistant message (text and
// calls) is added to the conversation; give the calls to
// [Agent.ExecuteToolCalls] to add their results.
func (a *Agent) ToolsCompletion(ctx context.Context) ([]ToolCall, error) {
	release, err := a.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	req, err := a.request(a.core.tools.get(ctx).raw)
	if err != nil {
		return nil, err
	}
	r, err := a.sendFitting(ctx, req, nil, 0, nil)
	if err != nil {
		return nil, err
	}
	calls := r.toolCalls()
	var ms messages
	ms.add(r.message(calls))
	a.addMessages(ms)
	return calls, nil
}
