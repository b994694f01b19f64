package robby

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/robby-go/robby/internal/mcpmeta"
)

// toolOps is the telemetry of the calls of one turn. It is nil when the
// agent has none. Each call has its span, a child of the run's. The spans
// are siblings however the calls run.
type toolOps struct {
	t     *telemetry
	ts    *toolset
	calls []ToolCall
	spans []trace.Span // nil without a tracer
	ctxs  []context.Context
}

// startTools starts the spans of calls, children of the span in ctx.
func (t *telemetry) startTools(ctx context.Context, ts *toolset, calls []ToolCall) *toolOps {
	if t == nil {
		return nil
	}
	ops := &toolOps{t: t, ts: ts, calls: calls}
	if t.tracer == nil {
		return ops
	}
	ops.spans = make([]trace.Span, len(calls))
	ops.ctxs = make([]context.Context, len(calls))
	for i, c := range calls {
		attrs := []attribute.KeyValue{semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(c.Name),
			semconv.GenAIToolCallID(c.ID)}
		if tool := ts.byName[c.Name]; tool != nil {
			attrs = append(attrs, semconv.GenAIToolType(toolType(tool)))
			if tool.mcpServer != "" {
				attrs = append(attrs, attribute.String("robby.mcp.server", tool.mcpServer))
			}
			if tool.description != "" {
				attrs = append(attrs, semconv.GenAIToolDescription(tool.description))
			}
		}
		if t.content {
			attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(t.secrets.redact(c.Arguments)))
		}
		ops.ctxs[i], ops.spans[i] = t.tracer.Start(ctx, "execute_tool "+c.Name,
			trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	}
	return ops
}

// context returns the context of call i: ctx, with its span if traced.
func (ops *toolOps) context(ctx context.Context, i int) context.Context {
	if ops == nil || ops.ctxs == nil {
		return ctx
	}
	return ops.ctxs[i]
}

// end ends the span of call i with its result, and records its duration.
func (ops *toolOps) end(ctx context.Context, i int, r *ToolResult) {
	if ops == nil {
		return
	}
	if ops.spans != nil {
		span := ops.spans[i]
		if ops.t.content {
			span.SetAttributes(semconv.GenAIToolCallResultKey.String(ops.t.secrets.redact(r.Output)))
		}
		ops.t.fail(span, r.Err)
		span.End()
	}
	if ops.t.instruments == nil {
		return
	}
	// A name the model made up would make a metric series of its own.
	name, typ := semconv.ErrorTypeOther.Value.AsString(), "function"
	if tool := ops.ts.byName[ops.calls[i].Name]; tool != nil {
		name, typ = tool.name, toolType(tool)
	}
	attrs := []attribute.KeyValue{semconv.GenAIToolName(name), semconv.GenAIToolType(typ)}
	if r.Err != nil {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errorType(r.Err)))
	}
	ops.t.tools.Record(ctx, r.Duration.Seconds(), metric.WithAttributes(attrs...))
}

// toolType is the gen_ai.tool.type of t: "extension" for an MCP tool,
// "function" for a local one.
func toolType(t *Tool) string {
	if t.mcpServer != "" {
		return "extension"
	}
	return "function"
}

// traced reports whether the agent traces.
func (t *telemetry) traced() bool { return t != nil && t.tracer != nil }

// injectMeta puts the trace context of ctx in the _meta of an MCP request,
// as the MCP semantic conventions say. So a server reached over any
// transport, stdio too, can join the trace.
func (t *telemetry) injectMeta(ctx context.Context, p *mcp.CallToolParams) {
	if !t.traced() || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	if p.Meta == nil {
		p.Meta = mcp.Meta{}
	}
	t.prop.Inject(ctx, mcpmeta.Carrier(p.Meta))
}
