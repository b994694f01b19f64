package robby

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"
)

// WithTracerProvider has the agent trace its work with OpenTelemetry, in
// the GenAI semantic conventions. There is a span for each run
// (invoke_agent), each model call (chat {model}) and each tool call
// (execute_tool {name}). The W3C trace context goes with the requests to
// the model endpoint and to MCP servers, in HTTP headers and in the _meta
// of MCP requests. So a traced server joins the trace. Prompts, answers
// and tool arguments are left out unless [WithTracedContent] is given.
// Secrets never show.
//
// Without it (the default) the agent starts no span and costs nothing
// more.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) error {
		if tp == nil {
			return errors.New("robby: WithTracerProvider: nil provider")
		}
		c.tracerProvider = tp
		return nil
	}
}

// WithMeterProvider has the agent record OpenTelemetry metrics. Model
// calls feed the GenAI histograms gen_ai.client.token.usage and
// gen_ai.client.operation.duration. Streamed ones also feed
// gen_ai.client.operation.time_to_first_chunk. Tool calls feed
// robby.tool.duration, with error.type for those that failed. The counter
// robby.runs counts runs by outcome: answered, pending, max_turns, budget,
// canceled, error.
//
// Without it (the default) the agent records nothing and costs nothing
// more.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) error {
		if mp == nil {
			return errors.New("robby: WithMeterProvider: nil provider")
		}
		c.meterProvider = mp
		return nil
	}
}

// WithTracedContent makes the spans of [WithTracerProvider] carry what was
// said. That is the messages sent to the model and its answer
// (gen_ai.input.messages, gen_ai.output.messages). It is also tool
// arguments and results (gen_ai.tool.call.arguments,
// gen_ai.tool.call.result). It is off by default, since conversations hold
// personal data. The agent's secrets (API key, MCP headers and environment
// values) are replaced in it.
func WithTracedContent() Option {
	return func(c *config) error {
		c.tracedContent = true
		return nil
	}
}

// instrumentationName names robby's tracer and meter.
const instrumentationName = "github.com/robby-go/robby"

// telemetry is how an agent reports its work. It is nil when neither a
// tracer nor a meter provider was given, so the hot paths test one pointer.
type telemetry struct {
	tracer       trace.Tracer // nil without a tracer provider
	provider     string       // gen_ai.provider.name of the agent's endpoint
	content      bool         // WithTracedContent
	secrets      secrets
	prop         propagation.TextMapPropagator
	*instruments // nil without a meter provider
}

// instruments are the agent's metrics.
type instruments struct {
	tokens     genaiconv.ClientTokenUsage
	duration   genaiconv.ClientOperationDuration
	firstChunk genaiconv.ClientOperationTimeToFirstChunk
	tools      metric.Float64Histogram
	runs       metric.Int64Counter
}

// The bucket boundaries the GenAI semantic conventions recommend.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
)

func newTelemetry(cfg *config) (*telemetry, error) {
	if cfg.tracerProvider == nil && cfg.meterProvider == nil {
		return nil, nil
	}
	t := &telemetry{provider: endpointProvider(cfg), content: cfg.tracedContent, secrets: cfg.secrets, prop: propagation.TraceContext{}}
	if cfg.tracerProvider != nil {
		t.tracer = cfg.tracerProvider.Tracer(instrumentationName, trace.WithSchemaURL(semconv.SchemaURL))
	}
	if cfg.meterProvider != nil {
		m := cfg.meterProvider.Meter(instrumentationName, metric.WithSchemaURL(semconv.SchemaURL))
		var in instruments
		var errs [5]error
		in.tokens, errs[0] = genaiconv.NewClientTokenUsage(m, metric.WithExplicitBucketBoundaries(tokenBuckets...))
		in.duration, errs[1] = genaiconv.NewClientOperationDuration(m, metric.WithExplicitBucketBoundaries(durationBuckets...))
		in.tools, errs[2] = m.Float64Histogram("robby.tool.duration", metric.WithUnit("s"),
			metric.WithDescription("Duration of tool calls, with error.type for those that failed."),
			metric.WithExplicitBucketBoundaries(durationBuckets...))
		in.runs, errs[3] = m.Int64Counter("robby.runs", metric.WithUnit("{run}"),
			metric.WithDescription("Runs of the agent loop, by outcome."))
		in.firstChunk, errs[4] = genaiconv.NewClientOperationTimeToFirstChunk(m, metric.WithExplicitBucketBoundaries(durationBuckets...))
		if err := errors.Join(errs[:]...); err != nil {
			return nil, fmt.Errorf("WithMeterProvider: %w", err)
		}
		t.instruments = &in
	}
	return t, nil
}

// TraceContext returns ctx with the trace context that carrier holds (W3C
// traceparent and tracestate headers). A run started with it joins the
// caller's trace: its invoke_agent span is a child of the caller's span.
// It is for servers that run the agent for their clients, such as
// packages openaiserver (the HTTP headers) and mcpserver (the _meta of a
// tool call). It returns ctx as it is when the agent has no tracer
// provider ([WithTracerProvider]). It does the same when ctx already holds
// a span, such as the server's own HTTP span.
func (a *Agent) TraceContext(ctx context.Context, carrier propagation.TextMapCarrier) context.Context {
	t := a.core.tel
	if t == nil || t.tracer == nil || trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	return t.prop.Extract(ctx, carrier)
}

// A runOp is the telemetry of one run. It is nil when the agent has none.
type runOp struct {
	t    *telemetry
	span trace.Span // nil without a tracer
}

// startRun starts the span of a run, a child of the one in ctx. The GenAI
// conventions name an agent's span for the agent. So the run of an agent
// used as a tool (as, not nil) is named for the tool.
func (t *telemetry) startRun(ctx context.Context, model string, as *toolIdentity) (context.Context, *runOp) {
	if t == nil {
		return ctx, nil
	}
	op := &runOp{t: t}
	if t.tracer != nil {
		name := "invoke_agent"
		attrs := []attribute.KeyValue{semconv.GenAIOperationNameInvokeAgent,
			semconv.GenAIProviderNameKey.String(t.provider), semconv.GenAIRequestModel(model)}
		if as != nil {
			name += " " + as.name
			attrs = append(attrs, semconv.GenAIAgentName(as.name), semconv.GenAIAgentDescription(as.description))
		}
		ctx, op.span = t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	}
	return ctx, op
}

// end ends the run's span with what the run did, and counts it.
func (op *runOp) end(ctx context.Context, res *Result, err error) {
	if op == nil {
		return
	}
	outcome := runOutcome(res, err)
	if op.span != nil {
		attrs := usageAttributes([]attribute.KeyValue{attribute.Int("robby.turns", res.Turns),
			attribute.String("robby.outcome", outcome)}, res.Usage)
		if len(res.Models) > 0 {
			attrs = append(attrs, attribute.StringSlice("robby.models", res.Models))
		}
		op.span.SetAttributes(attrs...)
		op.t.fail(op.span, err)
		op.span.End()
	}
	if op.t.instruments != nil {
		op.t.runs.Add(ctx, 1, metric.WithAttributes(attribute.String("robby.outcome", outcome)))
	}
}

// usageAttributes appends the attributes of u to attrs: the tokens in and
// out. Their cached and reasoning parts come when the provider said them,
// the cost when prices gave one.
func usageAttributes(attrs []attribute.KeyValue, u Usage) []attribute.KeyValue {
	attrs = append(attrs, semconv.GenAIUsageInputTokens(int(u.PromptTokens)), semconv.GenAIUsageOutputTokens(int(u.CompletionTokens)))
	if u.CachedPromptTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageCacheReadInputTokens(int(u.CachedPromptTokens)))
	}
	if u.ReasoningTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageReasoningOutputTokens(int(u.ReasoningTokens)))
	}
	if u.Cost > 0 {
		attrs = append(attrs, attribute.Float64("robby.usage.cost", u.Cost))
	}
	return attrs
}

// runOutcome names how a run ended, for the robby.runs counter.
func runOutcome(res *Result, err error) string {
	switch {
	case err == nil && len(res.Pending) > 0:
		return "pending"
	case err == nil:
		return "answered"
	case errors.Is(err, ErrMaxTurns):
		return "max_turns"
	case errors.Is(err, ErrBudget):
		return "budget"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	}
	return "error"
}

// fail marks span as failed with err, if err is not nil. It sets status
// Error and error.type, and adds an exception event whose message has the
// secrets replaced.
func (t *telemetry) fail(span trace.Span, err error) {
	if err == nil {
		return
	}
	msg := t.secrets.redact(err.Error())
	typ := errorType(err)
	span.SetAttributes(semconv.ErrorTypeKey.String(typ))
	span.AddEvent(semconv.ExceptionEventName, trace.WithAttributes(
		semconv.ExceptionType(typ), semconv.ExceptionMessage(msg)))
	span.SetStatus(codes.Error, msg)
}

// errorKinds name robby's errors for error.type, a low-cardinality value.
var errorKinds = []struct {
	err  error
	name string
}{
	{ErrMaxTurns, "max_turns"},
	{ErrBudget, "budget"},
	{ErrIncompleteStream, "incomplete_stream"},
	{ErrNoChoices, "no_choices"},
	{ErrContextLength, "context_length"},
	{ErrUnknownTool, "unknown_tool"},
	{ErrInvalidArguments, "invalid_arguments"},
	{ErrToolLimit, "tool_limit"},
	{ErrToolPanic, "tool_panic"},
	{ErrNotApproved, "not_approved"},
	{ErrInvalidAnswer, "invalid_answer"},
	{context.DeadlineExceeded, "timeout"},
	{context.Canceled, "canceled"},
}

// errorType returns the error.type of err. It is the HTTP status of an
// endpoint's error, or the name of a robby error. A network failure is
// "timeout" or "connection_error". Anything else is "_OTHER".
func errorType(err error) string {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		if apiErr.StatusCode == 0 {
			return "stream_error"
		}
		return strconv.Itoa(apiErr.StatusCode)
	}
	for _, k := range errorKinds {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	if netErr, ok := errors.AsType[net.Error](err); ok {
		if netErr.Timeout() {
			return "timeout"
		}
		return "connection_error"
	}
	return semconv.ErrorTypeOther.Value.AsString()
}

// seconds returns the time since start, in seconds, for the histograms.
func seconds(start time.Time) float64 { return time.Since(start).Seconds() }

// endpointProvider returns the gen_ai.provider.name of the agent's own
// endpoint ([WithBaseURL], or OPENAI_BASE_URL). The conventions ask for it
// on a run's span. A model call's span names the provider that answered.
func endpointProvider(cfg *config) string {
	base := os.Getenv("OPENAI_BASE_URL")
	if cfg.baseURL != nil {
		base = *cfg.baseURL
	}
	u, err := url.Parse(base)
	if err != nil {
		return providerName("")
	}
	return providerName(u.Hostname())
}

// providers are the gen_ai.provider.name of known endpoints' hosts. Others
// are "openai", the API they speak, as the conventions advise.
var providers = map[string]string{
	"generativelanguage.googleapis.com": "gcp.gemini",
	"api.anthropic.com":                 "anthropic",
	"api.deepseek.com":                  "deepseek",
	"api.groq.com":                      "groq",
	"api.mistral.ai":                    "mistral_ai",
	"api.perplexity.ai":                 "perplexity",
	"api.x.ai":                          "x_ai",
}

// providerName is the gen_ai.provider.name of a server by its host.
func providerName(host string) string {
	if p, ok := providers[host]; ok {
		return p
	}
	if strings.HasSuffix(host, ".openai.azure.com") {
		return "azure.ai.openai"
	}
	return "openai"
}
