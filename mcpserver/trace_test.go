package mcpserver_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/mcpserver"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/robbytest/agenttest"
)

// tracedAgent returns an agent traced into spans, answering "Sunny.".
func tracedAgent(t *testing.T, spans *tracetest.InMemoryExporter) *robby.Agent {
	t.Helper()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return agenttest.New(t, agenttest.NewServer(t, robbytest.Text("Sunny.")), robby.WithModel("inner"), robby.WithTracerProvider(tp))
}

// spansOf returns the spans named name, that asked for model if it is not "".
func spansOf(spans *tracetest.InMemoryExporter, name, model string) []tracetest.SpanStub {
	var found []tracetest.SpanStub
	for _, s := range spans.GetSpans() {
		if s.Name == name && (model == "" || slices.Contains(s.Attributes, semconv.GenAIRequestModel(model))) {
			found = append(found, s)
		}
	}
	return found
}

// A traced robby agent that calls a served agent's ask tool has the
// served agent's run in its trace, under the tool call's span: the trace
// context goes in the call's _meta over any transport.
func TestAskJoinsTheCallersTrace(t *testing.T) {
	for _, transport := range []string{"in-memory", "streamable HTTP"} {
		t.Run(transport, func(t *testing.T) {
			spans := tracetest.NewInMemoryExporter()
			srv := newServer(t, tracedAgent(t, spans), mcpserver.Options{})
			var server robby.MCPServer
			if transport == "in-memory" {
				ct, st := mcp.NewInMemoryTransports()
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- srv.Run(ctx, st) }()
				t.Cleanup(func() { cancel(); <-done })
				server = robby.MCPTransport("served", ct)
			} else {
				server = robby.MCPStreamableHTTP("served", serveHTTP(t, srv))
			}

			upstream := agenttest.NewServer(t, robbytest.ToolCalls(robbytest.Call("ask", `{"prompt":"Weather in Paris?"}`)), robbytest.Text("It is sunny."))
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
			t.Cleanup(func() { tp.Shutdown(context.Background()) })
			caller := agenttest.New(t, upstream, robby.WithModel("outer"), robby.WithTracerProvider(tp), robby.WithMCP(server))
			_, err := caller.Run(t.Context(), "Weather?")
			require.NoError(t, err)

			calls := spansOf(spans, "execute_tool ask", "")
			require.Len(t, calls, 1)
			inner := spansOf(spans, "invoke_agent", "inner")
			require.Len(t, inner, 1)
			assert.Equal(t, calls[0].SpanContext.TraceID(), inner[0].SpanContext.TraceID(), "one trace")
			assert.Equal(t, calls[0].SpanContext.SpanID(), inner[0].Parent.SpanID(), "the served run is a child of the tool call")
		})
	}
}

// A host that sends its trace context in the HTTP headers only has the
// run in its trace too.
func TestAskJoinsTheTraceOfTheHeaders(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	url := serveHTTP(t, newServer(t, tracedAgent(t, spans), mcpserver.Options{}))
	ctx, span := sdktrace.NewTracerProvider().Tracer("host").Start(t.Context(), "host call")
	defer span.End()
	header := http.Header{}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(header))

	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: headerTransport{"traceparent", header.Get("traceparent")}}}, nil)
	require.NoError(t, err)
	defer cs.Close()
	assert.Equal(t, "Sunny.", text(t, ask(t, cs, "Weather in Paris?", nil)))

	inner := spansOf(spans, "invoke_agent", "inner")
	require.Len(t, inner, 1)
	want := span.SpanContext()
	assert.Equal(t, want.TraceID(), inner[0].SpanContext.TraceID())
	assert.Equal(t, want.SpanID(), inner[0].Parent.SpanID())
	assert.Equal(t, trace.SpanKindInternal, inner[0].SpanKind)
}
