package robby

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/openai/openai-go/v3/option"
	"github.com/robby-go/robby/internal/chattext"
	sjson "github.com/segmentio/encoding/json"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"
)

// A chatOp is the telemetry of one model call. It is nil when the agent
// has none. The openai-go middleware fills in the server it went to.
type chatOp struct {
	t      *telemetry
	span   trace.Span // nil without a tracer
	start  time.Time
	model  string
	stream bool

	host      string // server.address and port, set by the middleware
	port      int
	id, reply string // gen_ai.response.id and .model, from the first chunk or the response
	first     time.Duration
	metaSeen  bool
}

type chatOpKey struct{}

// startChat starts the span of a model call of model, a child of the one
// in ctx. It puts the call in the context for the middleware.
func (t *telemetry) startChat(ctx context.Context, model string, req *request) (context.Context, *chatOp) {
	if t == nil {
		return ctx, nil
	}
	op := &chatOp{t: t, start: time.Now(), model: model, stream: req.stream}
	if t.tracer != nil {
		ctx, op.span = t.tracer.Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(semconv.GenAIOperationNameChat, semconv.GenAIRequestModel(model),
				semconv.GenAIRequestStream(req.stream)))
		if t.content {
			op.span.SetAttributes(semconv.GenAIInputMessagesKey.String(t.secrets.redact(inputMessages(req))))
		}
	}
	return context.WithValue(ctx, chatOpKey{}, op), op
}

// meta reads the response's id and model from a response or the first
// chunk that has them. The loop's own decoding skips them.
func (op *chatOp) meta(data []byte) {
	if op == nil || op.metaSeen {
		return
	}
	if op.first == 0 {
		op.first = time.Since(op.start)
	}
	var m struct {
		ID    string `json:"id"`
		Model string `json:"model"`
	}
	if sjson.Unmarshal(data, &m) == nil && (m.ID != "" || m.Model != "") {
		op.id, op.reply, op.metaSeen = m.ID, m.Model, true
	}
}

// end ends the span of the call with its reply (nil if none came) and
// err. It records the call's duration and tokens.
func (op *chatOp) end(ctx context.Context, r *reply, err error) {
	if op == nil {
		return
	}
	common := op.common()
	if op.span != nil {
		attrs := append(common,
			semconv.GenAIResponseID(op.id))
		if op.stream && op.first > 0 {
			attrs = append(attrs, semconv.GenAIResponseTimeToFirstChunk(op.first.Seconds()))
		}
		if r != nil {
			attrs = usageAttributes(attrs, r.usage)
			if r.finish != "" {
				attrs = append(attrs, semconv.GenAIResponseFinishReasons(r.finish))
			}
			if op.t.content {
				attrs = append(attrs, semconv.GenAIOutputMessagesKey.String(op.t.secrets.redact(outputMessages(r))))
			}
		}
		op.span.SetAttributes(attrs...)
		op.t.fail(op.span, err)
		op.span.End()
	}
	if op.t.instruments == nil {
		return
	}
	provider := genaiconv.ProviderNameAttr(providerName(op.host))
	if err != nil {
		common = append(common, semconv.ErrorTypeKey.String(errorType(err)))
	}
	op.t.duration.Record(ctx, seconds(op.start), genaiconv.OperationNameChat, provider, common...)
	if op.stream && op.first > 0 {
		op.t.firstChunk.Record(ctx, op.first.Seconds(), genaiconv.OperationNameChat, provider, common...)
	}
	if r != nil && err == nil {
		op.t.tokens.Record(ctx, r.usage.PromptTokens, genaiconv.OperationNameChat, provider, genaiconv.TokenTypeInput, common...)
		op.t.tokens.Record(ctx, r.usage.CompletionTokens, genaiconv.OperationNameChat, provider, genaiconv.TokenTypeOutput, common...)
	}
}

// common returns the attributes of both the span and the metrics.
func (op *chatOp) common() []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 12)
	attrs = append(attrs, semconv.GenAIProviderNameKey.String(providerName(op.host)), semconv.GenAIRequestModel(op.model))
	if op.reply != "" {
		attrs = append(attrs, semconv.GenAIResponseModel(op.reply))
	}
	if op.host != "" {
		attrs = append(attrs, semconv.ServerAddress(op.host), semconv.ServerPort(op.port))
	}
	return attrs
}

// middleware is the openai-go middleware of a traced agent. It notes the
// server a model call goes to and sends the trace context with it.
func (t *telemetry) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	ctx := req.Context()
	if op, _ := ctx.Value(chatOpKey{}).(*chatOp); op != nil {
		op.host, op.port = hostPort(req.URL)
	}
	t.prop.Inject(ctx, propagation.HeaderCarrier(req.Header))
	return next(req)
}

// hostPort returns the server.address and server.port of u.
func hostPort(u *url.URL) (string, int) {
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		port = 80
		if u.Scheme == "https" {
			port = 443
		}
	}
	return u.Hostname(), port
}

// The messages of the GenAI conventions (gen_ai.input.messages and
// gen_ai.output.messages), recorded only with WithTracedContent.
type (
	otelMessage struct {
		Role         string     `json:"role"`
		Parts        []otelPart `json:"parts"`
		FinishReason string     `json:"finish_reason,omitempty"`
	}
	otelPart struct {
		Type      string          `json:"type"`
		Content   string          `json:"content,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
		Response  string          `json:"response,omitempty"`
	}
)

// inputMessages returns the messages of req in the conventions' form.
func inputMessages(req *request) string {
	var out []otelMessage
	for _, part := range [...][]json.RawMessage{req.history[:req.lead], req.system, req.history[req.lead:], req.pending} {
		for _, raw := range part {
			var m chattext.Message
			if json.Unmarshal(raw, &m) != nil {
				continue
			}
			om := otelMessage{Role: m.Role}
			if text := chattext.Content(m.Content); text != "" {
				if m.Role == "tool" {
					om.Parts = append(om.Parts, otelPart{Type: "tool_call_response", ID: m.ToolCallID, Response: text})
				} else {
					om.Parts = append(om.Parts, otelPart{Type: "text", Content: text})
				}
			}
			for _, c := range m.ToolCalls {
				om.Parts = append(om.Parts, toolCallPart(c.ID, c.Function.Name, c.Function.Arguments))
			}
			out = append(out, om)
		}
	}
	return marshalMessages(out)
}

// outputMessages returns the reply in the conventions' form.
func outputMessages(r *reply) string {
	om := otelMessage{Role: "assistant", FinishReason: r.finish}
	if s := r.reasoning.String(); s != "" {
		om.Parts = append(om.Parts, otelPart{Type: "reasoning", Content: s})
	}
	if s := r.text.String(); s != "" {
		om.Parts = append(om.Parts, otelPart{Type: "text", Content: s})
	}
	for _, c := range r.calls { // not toolCalls, which makes the missing ids anew
		om.Parts = append(om.Parts, toolCallPart(c.id, c.name, c.args.Text()))
	}
	return marshalMessages([]otelMessage{om})
}

func toolCallPart(id, name, args string) otelPart {
	p := otelPart{Type: "tool_call", ID: id, Name: name}
	if json.Valid([]byte(args)) {
		p.Arguments = json.RawMessage(args)
	}
	return p
}

func marshalMessages(ms []otelMessage) string {
	for i := range ms {
		if ms[i].Parts == nil {
			ms[i].Parts = []otelPart{}
		}
	}
	b, err := json.Marshal(ms)
	if err != nil {
		return ""
	}
	return string(b)
}
