package openaiserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
)

// named returns the spans named name, in the order they ended.
func named(spans *tracetest.InMemoryExporter, name string) []tracetest.SpanStub {
	var found []tracetest.SpanStub
	for _, s := range spans.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	return found
}

// A client that sends its trace context (traceparent) has the run join
// its trace: the run's span is a child of the client's, in both APIs.
func TestRunJoinsTheClientsTrace(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	upstream := newServer(t)
	url := serveResponses(t, upstream, openaiserver.Options{Store: newStore(t)}, robby.WithTracerProvider(tp))

	// The client is traced by another provider, as another process's.
	clientTP := sdktrace.NewTracerProvider()
	t.Cleanup(func() { clientTP.Shutdown(context.Background()) })
	ctx, caller := clientTP.Tracer("client").Start(t.Context(), "client call", trace.WithSpanKind(trace.SpanKindClient))
	defer caller.End()
	header := http.Header{}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(header))
	client := clientFor(url, "k")
	traced := option.WithHeader("traceparent", header.Get("traceparent"))

	upstream.Reply(robbytest.Text("chat"), robbytest.Text("response"), robbytest.Text("untraced"))
	_, err := client.Chat.Completions.New(t.Context(), userParams("hi"), traced)
	require.NoError(t, err)
	_, err = client.Responses.New(t.Context(), ask("hi", ""), traced)
	require.NoError(t, err)
	_, err = client.Chat.Completions.New(t.Context(), userParams("hi"))
	require.NoError(t, err)

	runs := named(spans, "invoke_agent")
	require.Len(t, runs, 3)
	want := caller.SpanContext()
	for i, run := range runs[:2] {
		assert.Equal(t, want.TraceID(), run.SpanContext.TraceID(), "run %d is in the client's trace", i)
		assert.Equal(t, want.SpanID(), run.Parent.SpanID(), "run %d is a child of the client's span", i)
		assert.True(t, run.Parent.IsRemote())
	}
	assert.False(t, runs[2].Parent.IsValid(), "without a traceparent, the run is a root")
	assert.NotEqual(t, want.TraceID(), runs[2].SpanContext.TraceID())
}

// A server with a span of its own around the endpoint (otelhttp, say)
// keeps it: the run is a child of the server's span, not of the client's.
func TestRunUnderTheServersSpan(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	upstream := newServer(t)
	upstream.Reply(robbytest.Text("hi"))
	a := newTestAgent(t, upstream, robby.WithTracerProvider(tp))
	endpoint := openaiserver.New(map[string]*robby.Agent{"robby": a}, openaiserver.Options{})
	var server trace.SpanContext
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tp.Tracer("http").Start(ctx, "POST /v1/chat/completions", trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		server = span.SpanContext()
		endpoint.ServeHTTP(w, r.WithContext(ctx))
	}))
	t.Cleanup(hs.Close)

	ctx, caller := sdktrace.NewTracerProvider().Tracer("client").Start(t.Context(), "client call")
	defer caller.End()
	header := http.Header{}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(header))
	client := clientFor(hs.URL, "k")
	_, err := client.Chat.Completions.New(t.Context(), userParams("hi"),
		option.WithHeader("traceparent", header.Get("traceparent")))
	require.NoError(t, err)

	runs := named(spans, "invoke_agent")
	require.Len(t, runs, 1)
	run := runs[0]
	assert.Equal(t, caller.SpanContext().TraceID(), run.SpanContext.TraceID())
	assert.Equal(t, server.SpanID(), run.Parent.SpanID(), "the run is a child of the server's span")
}
