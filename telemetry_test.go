package robby

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/robby-go/robby/internal/mcpmeta"
	"github.com/robby-go/robby/robbytest"
)

// telemetryRig is an OTel SDK whose spans and metrics a test reads.
type telemetryRig struct {
	spans  *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newTelemetryRig(t *testing.T) *telemetryRig {
	r := &telemetryRig{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(r.spans))
	r.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() {
		r.tp.Shutdown(context.Background())
		r.mp.Shutdown(context.Background())
	})
	return r
}

func (r *telemetryRig) options() []Option {
	return []Option{WithTracerProvider(r.tp), WithMeterProvider(r.mp)}
}

// named returns the spans named name, in the order they ended.
func (r *telemetryRig) named(name string) []tracetest.SpanStub {
	var found []tracetest.SpanStub
	for _, s := range r.spans.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	return found
}

// span returns the one span named name.
func (r *telemetryRig) span(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	found := r.named(name)
	require.Len(t, found, 1, "spans named %q", name)
	return found[0]
}

// attrs returns the attributes of s as a map of their values.
func attrs(s tracetest.SpanStub) map[string]any {
	m := make(map[string]any, len(s.Attributes))
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

// metrics collects the metrics, by name.
func (r *telemetryRig) metrics(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

func pointAttrs(set attribute.Set) map[string]any {
	m := map[string]any{}
	for _, kv := range set.ToSlice() {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

// tracedMCPServer serves a tool, lookup, over streamable HTTP, as a traced
// server would. Each HTTP request and each call joins the trace its client
// sent, in the headers and in _meta.
func tracedMCPServer(t *testing.T, tp trace.TracerProvider) string {
	tracer := tp.Tracer("mcp-server")
	prop := propagation.TraceContext{}
	s := mcp.NewServer(&mcp.Implementation{Name: "traced", Version: "v0"}, nil)
	s.AddTool(&mcp.Tool{Name: "lookup", Description: "Looks a key up", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ctx := prop.Extract(context.Background(), mcpmeta.Carrier(req.Params.Meta))
			_, span := tracer.Start(ctx, "server tools/call lookup", trace.WithSpanKind(trace.SpanKindServer))
			defer span.End()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "y"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		if trace.SpanContextFromContext(ctx).IsValid() {
			var span trace.Span
			ctx, span = tracer.Start(ctx, "server HTTP "+r.Method, trace.WithSpanKind(trace.SpanKindServer))
			defer span.End()
			r = r.WithContext(ctx)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

func TestTracedRunWithLocalAndMCPTools(t *testing.T) {
	rig := newTelemetryRig(t)
	srv := newServer(t)
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`), robbytest.Call("lookup", `{"key":"x"}`)).WithUsage(10, 5),
		robbytest.Text("3 and y").WithUsage(20, 4),
	)
	mcpURL := tracedMCPServer(t, rig.tp)
	a := newTestAgent(t, srv, append(rig.options(), WithTools(addTool), WithMCP(MCPStreamableHTTP("kv", mcpURL)))...)

	res, err := a.Run(t.Context(), "add and look up")
	require.NoError(t, err)
	assert.Equal(t, "3 and y", res.Text)

	run := rig.span(t, "invoke_agent")
	assert.False(t, run.Parent.IsValid(), "the run is the root")
	assert.Equal(t, trace.SpanKindInternal, run.SpanKind)
	assert.Equal(t, map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "openai", "gen_ai.request.model": "test-model",
		"gen_ai.usage.input_tokens": int64(30), "gen_ai.usage.output_tokens": int64(9),
		"robby.turns": int64(2), "robby.outcome": "answered", "robby.models": []string{"test-model", "test-model"},
	}, attrs(run))

	chats := rig.named("chat test-model")
	require.Len(t, chats, 2)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)
	for i, c := range chats {
		assert.Equal(t, run.SpanContext.SpanID(), c.Parent.SpanID(), "chat %d is a child of the run", i)
		assert.Equal(t, trace.SpanKindClient, c.SpanKind)
		got := attrs(c)
		assert.Equal(t, "chat", got["gen_ai.operation.name"])
		assert.Equal(t, "openai", got["gen_ai.provider.name"])
		assert.Equal(t, "test-model", got["gen_ai.request.model"])
		assert.Equal(t, "test-model", got["gen_ai.response.model"])
		assert.Equal(t, "chatcmpl-robbytest", got["gen_ai.response.id"])
		assert.Equal(t, false, got["gen_ai.request.stream"])
		assert.Equal(t, "127.0.0.1", got["server.address"])
		assert.Equal(t, int64(port), got["server.port"])
		assert.NotContains(t, got, "gen_ai.input.messages", "content is off by default")
		assert.NotContains(t, got, "gen_ai.output.messages")
	}
	assert.Equal(t, []string{"tool_calls"}, attrs(chats[0])["gen_ai.response.finish_reasons"])
	assert.Equal(t, []string{"stop"}, attrs(chats[1])["gen_ai.response.finish_reasons"])
	assert.Equal(t, int64(10), attrs(chats[0])["gen_ai.usage.input_tokens"])
	assert.Equal(t, int64(4), attrs(chats[1])["gen_ai.usage.output_tokens"])

	// The model endpoint got the trace context of each chat span.
	for i, req := range srv.Requests() {
		sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(req.Header)))
		assert.Equal(t, chats[i].SpanContext.SpanID(), sc.SpanID(), "traceparent of request %d", i)
	}

	add, lookup := rig.span(t, "execute_tool add"), rig.span(t, "execute_tool lookup")
	for _, s := range []tracetest.SpanStub{add, lookup} {
		assert.Equal(t, run.SpanContext.SpanID(), s.Parent.SpanID(), "%s is a child of the run, a sibling of the other call", s.Name)
		assert.Equal(t, codes.Unset, s.Status.Code)
	}
	assert.Equal(t, map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add", "gen_ai.tool.call.id": res.ToolCalls[0].Call.ID,
		"gen_ai.tool.type": "function", "gen_ai.tool.description": "Adds two numbers",
	}, attrs(add))
	assert.Equal(t, map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup", "gen_ai.tool.call.id": res.ToolCalls[1].Call.ID,
		"gen_ai.tool.type": "extension", "gen_ai.tool.description": "Looks a key up", "robby.mcp.server": "kv",
	}, attrs(lookup))

	// The MCP server joined the trace, under the tool call's span, through
	// the HTTP headers and through _meta.
	// The server's spans end once it has answered: wait for them.
	for _, name := range []string{"server HTTP POST", "server tools/call lookup"} {
		var s *tracetest.SpanStub
		require.Eventually(t, func() bool {
			for _, ss := range rig.named(name) {
				if ss.Parent.SpanID() == lookup.SpanContext.SpanID() {
					s = &ss
				}
			}
			return s != nil
		}, 5*time.Second, 5*time.Millisecond, "a span %q under execute_tool lookup", name)
		assert.Equal(t, run.SpanContext.TraceID(), s.SpanContext.TraceID())
	}

	m := rig.metrics(t)
	tokens := m["gen_ai.client.token.usage"].(metricdata.Histogram[int64])
	sums := map[string]int64{}
	for _, p := range tokens.DataPoints {
		pa := pointAttrs(p.Attributes)
		assert.Equal(t, "chat", pa["gen_ai.operation.name"])
		assert.Equal(t, "test-model", pa["gen_ai.request.model"])
		assert.Equal(t, "127.0.0.1", pa["server.address"])
		sums[pa["gen_ai.token.type"].(string)] += p.Sum
	}
	assert.Equal(t, map[string]int64{"input": 30, "output": 9}, sums)
	assert.Equal(t, tokenBuckets, tokens.DataPoints[0].Bounds)
	duration := m["gen_ai.client.operation.duration"].(metricdata.Histogram[float64])
	require.Len(t, duration.DataPoints, 1)
	assert.Equal(t, uint64(2), duration.DataPoints[0].Count)
	assert.Equal(t, durationBuckets, duration.DataPoints[0].Bounds)
	tools := m["robby.tool.duration"].(metricdata.Histogram[float64])
	byTool := map[string]any{}
	for _, p := range tools.DataPoints {
		pa := pointAttrs(p.Attributes)
		byTool[pa["gen_ai.tool.name"].(string)] = pa["gen_ai.tool.type"]
		assert.Equal(t, uint64(1), p.Count)
	}
	assert.Equal(t, map[string]any{"add": "function", "lookup": "extension"}, byTool)
	runs := m["robby.runs"].(metricdata.Sum[int64])
	require.Len(t, runs.DataPoints, 1)
	assert.Equal(t, int64(1), runs.DataPoints[0].Value)
	assert.Equal(t, map[string]any{"robby.outcome": "answered"}, pointAttrs(runs.DataPoints[0].Attributes))
}

func TestTracedStreamedRun(t *testing.T) {
	rig := newTelemetryRig(t)
	srv := newServer(t)
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("nosuch", `{}`)),
		robbytest.Text("no such tool, sorry").WithUsage(7, 3),
	)
	a := newTestAgent(t, srv, append(rig.options(), WithTools(addTool))...)
	for _, err := range a.Stream(t.Context(), "try") {
		require.NoError(t, err)
	}
	chats := rig.named("chat test-model")
	require.Len(t, chats, 2)
	for _, c := range chats {
		got := attrs(c)
		assert.Equal(t, true, got["gen_ai.request.stream"])
		assert.Equal(t, "chatcmpl-robbytest", got["gen_ai.response.id"])
		assert.Greater(t, got["gen_ai.response.time_to_first_chunk"], 0.0)
	}
	assert.Equal(t, int64(3), attrs(chats[1])["gen_ai.usage.output_tokens"])
	first := rig.metrics(t)["gen_ai.client.operation.time_to_first_chunk"].(metricdata.Histogram[float64])
	require.Len(t, first.DataPoints, 1)
	assert.Equal(t, uint64(2), first.DataPoints[0].Count)

	// A call of a tool the model made up fails, with a low-cardinality
	// error.type, and its metric does not take the made-up name.
	tool := rig.span(t, "execute_tool nosuch")
	assert.Equal(t, codes.Error, tool.Status.Code)
	assert.Equal(t, "unknown_tool", attrs(tool)["error.type"])
	require.Len(t, tool.Events, 1)
	assert.Equal(t, "exception", tool.Events[0].Name)
	m := rig.metrics(t)
	points := m["robby.tool.duration"].(metricdata.Histogram[float64]).DataPoints
	require.Len(t, points, 1)
	assert.Equal(t, map[string]any{"gen_ai.tool.name": "_OTHER", "gen_ai.tool.type": "function", "error.type": "unknown_tool"},
		pointAttrs(points[0].Attributes))
	assert.Equal(t, codes.Unset, rig.span(t, "invoke_agent").Status.Code, "the run went on")
}

func TestTracedFailedModelCall(t *testing.T) {
	rig := newTelemetryRig(t)
	srv := newServer(t)
	srv.Reply(robbytest.Error(http.StatusServiceUnavailable, `{"error":{"message":"overloaded, key sk-test-secret-0123"}}`))
	a := newTestAgent(t, srv, append(rig.options(), WithAPIKey("sk-test-secret-0123"))...)
	_, err := a.Run(t.Context(), "hello")
	require.Error(t, err)

	run, chat := rig.span(t, "invoke_agent"), rig.span(t, "chat test-model")
	for _, s := range []tracetest.SpanStub{run, chat} {
		assert.Equal(t, codes.Error, s.Status.Code, s.Name)
		assert.Equal(t, "503", attrs(s)["error.type"], s.Name)
		assert.NotContains(t, s.Status.Description, "sk-test-secret-0123", "no secret in %s's status", s.Name)
		for _, e := range s.Events {
			for _, kv := range e.Attributes {
				assert.NotContains(t, kv.Value.String(), "sk-test-secret-0123", "no secret in %s's events", s.Name)
			}
		}
	}
	assert.Contains(t, chat.Status.Description, "overloaded")
	assert.Equal(t, "error", attrs(run)["robby.outcome"])

	m := rig.metrics(t)
	points := m["gen_ai.client.operation.duration"].(metricdata.Histogram[float64]).DataPoints
	require.Len(t, points, 1)
	assert.Equal(t, "503", pointAttrs(points[0].Attributes)["error.type"])
	assert.NotContains(t, m, "gen_ai.client.token.usage", "no tokens were reported")
	runs := m["robby.runs"].(metricdata.Sum[int64]).DataPoints
	assert.Equal(t, map[string]any{"robby.outcome": "error"}, pointAttrs(runs[0].Attributes))
}

func TestTracedContent(t *testing.T) {
	const secret = "sk-test-secret-0123"
	rig := newTelemetryRig(t)
	srv := newServer(t)
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("echo_key", `{}`)),
		robbytest.Text("done"),
	)
	echo := NewTool("echo_key", "Leaks the key", func(context.Context, struct{}) (string, error) { return "key=" + secret, nil })
	a := newTestAgent(t, srv, append(rig.options(), WithAPIKey(secret), WithTools(echo), WithTracedContent(), WithSystem("Be brief."))...)
	_, err := a.Run(t.Context(), "show me")
	require.NoError(t, err)

	chats := rig.named("chat test-model")
	require.Len(t, chats, 2)
	assert.JSONEq(t, `[{"role":"system","parts":[{"type":"text","content":"Be brief."}]},
		{"role":"user","parts":[{"type":"text","content":"show me"}]}]`, attrs(chats[0])["gen_ai.input.messages"].(string))
	callID := attrs(rig.span(t, "execute_tool echo_key"))["gen_ai.tool.call.id"].(string)
	assert.JSONEq(t, `[{"role":"assistant","finish_reason":"tool_calls","parts":[{"type":"tool_call","id":"`+callID+`","name":"echo_key","arguments":{}}]}]`,
		attrs(chats[0])["gen_ai.output.messages"].(string))
	assert.JSONEq(t, `[{"role":"system","parts":[{"type":"text","content":"Be brief."}]},
		{"role":"user","parts":[{"type":"text","content":"show me"}]},
		{"role":"assistant","parts":[{"type":"tool_call","id":"`+callID+`","name":"echo_key","arguments":{}}]},
		{"role":"tool","parts":[{"type":"tool_call_response","id":"`+callID+`","response":"key=[redacted]"}]}]`,
		attrs(chats[1])["gen_ai.input.messages"].(string))
	tool := attrs(rig.span(t, "execute_tool echo_key"))
	assert.Equal(t, "{}", tool["gen_ai.tool.call.arguments"])
	assert.Equal(t, "key=[redacted]", tool["gen_ai.tool.call.result"])
	for _, s := range rig.spans.GetSpans() {
		for _, kv := range s.Attributes {
			assert.NotContains(t, kv.Value.String(), secret, "%s: %s", s.Name, kv.Key)
		}
	}
}

func TestMeteredWithoutTracing(t *testing.T) {
	rig := newTelemetryRig(t)
	srv := newServer(t)
	srv.Reply(robbytest.Text("hi").WithUsage(3, 1))
	a := newTestAgent(t, srv, WithMeterProvider(rig.mp))
	_, err := a.Run(t.Context(), "hello")
	require.NoError(t, err)
	assert.Empty(t, rig.spans.GetSpans())
	assert.Empty(t, srv.Requests()[0].Header.Get("traceparent"), "no trace context without a tracer")
	m := rig.metrics(t)
	assert.Contains(t, m, "gen_ai.client.token.usage")
	assert.Contains(t, m, "robby.runs")
}

func TestTelemetryOptionsRefuseNil(t *testing.T) {
	_, err := New(WithModel("m"), WithTracerProvider(nil))
	assert.ErrorContains(t, err, "WithTracerProvider: nil provider")
	_, err = New(WithModel("m"), WithMeterProvider(nil))
	assert.ErrorContains(t, err, "WithMeterProvider: nil provider")
}

// A typed run is one invoke_agent span, whatever the repairs it takes.
func TestTracedTypedRun(t *testing.T) {
	rig := newTelemetryRig(t)
	srv := newServer(t)
	srv.Reply(robbytest.Answer(badAnswer), robbytest.Answer(parisJSON))
	a := newTestAgent(t, srv, rig.options()...)
	got, _, err := RunTyped[city](t.Context(), a, "Describe Paris", WithAnswerMode(AnswerNative))
	require.NoError(t, err)
	assert.Equal(t, paris, got)
	run := rig.span(t, "invoke_agent")
	assert.Equal(t, int64(2), attrs(run)["robby.turns"])
	chats := rig.named("chat test-model")
	require.Len(t, chats, 2)
	for _, c := range chats {
		assert.Equal(t, run.SpanContext.SpanID(), c.Parent.SpanID())
	}
}

// Cached and reasoning tokens, when the provider reports them, are on the
// chat span and summed on the run's.
func TestTracedUsageParts(t *testing.T) {
	rig := newTelemetryRig(t)
	srv := newServer(t)
	srv.Reply(robbytest.Handler(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"o4-mini-2025","choices":[{"index":0,
			"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,
			"prompt_tokens_details":{"cached_tokens":64},"completion_tokens_details":{"reasoning_tokens":12}}}`)
	}))
	a := newTestAgent(t, srv, rig.options()...)
	_, err := a.Run(t.Context(), "hello")
	require.NoError(t, err)
	for _, s := range []tracetest.SpanStub{rig.span(t, "chat test-model"), rig.span(t, "invoke_agent")} {
		got := attrs(s)
		assert.Equal(t, int64(64), got["gen_ai.usage.cache_read.input_tokens"], s.Name)
		assert.Equal(t, int64(12), got["gen_ai.usage.reasoning.output_tokens"], s.Name)
	}
	assert.Equal(t, "o4-mini-2025", attrs(rig.span(t, "chat test-model"))["gen_ai.response.model"])
}

// A call that falls back is a chat span for each model tried, under the
// run's. The failed one has its error; the one that answered has none.
func TestTracedFallback(t *testing.T) {
	for _, tc := range []struct {
		name, errType string
		closed        bool
	}{
		{name: "503", errType: "503"},
		{name: "connection refused", errType: "connection_error", closed: true},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(tc.name+"/"+faultMode(stream), func(t *testing.T) {
				rig := newTelemetryRig(t)
				primary := newServer(t)
				primary.Reply(robbytest.Error(http.StatusServiceUnavailable, `{"error":{"message":"overloaded"}}`))
				url := primary.URL
				if tc.closed {
					url = closedURL()
				}
				second := newServer(t)
				second.Reply(robbytest.Text("from the fallback").WithUsage(5, 2))
				a, err := New(append(rig.options(), WithBaseURL(url), WithModel("small"), WithRequestOptions(noRetries),
					WithFallback(Fallback{Model: "big", BaseURL: second.URL}))...)
				require.NoError(t, err)
				defer a.Close()

				res, _, err := faultAsk(t.Context(), a, stream, "Hi")
				require.NoError(t, err)
				assert.Equal(t, []string{"big"}, res.Models)

				run := rig.span(t, "invoke_agent")
				assert.Equal(t, codes.Unset, run.Status.Code, "the run answered")
				assert.Equal(t, "small", attrs(run)["gen_ai.request.model"])
				assert.Equal(t, []string{"big"}, attrs(run)["robby.models"])
				failed, answered := rig.span(t, "chat small"), rig.span(t, "chat big")
				for _, c := range []tracetest.SpanStub{failed, answered} {
					assert.Equal(t, run.SpanContext.SpanID(), c.Parent.SpanID(), "%s is a child of the run", c.Name)
				}
				assert.True(t, failed.EndTime.Before(answered.StartTime) || failed.EndTime.Equal(answered.StartTime),
					"the fallback is asked after the first model failed")
				assert.Equal(t, codes.Error, failed.Status.Code)
				assert.Equal(t, tc.errType, attrs(failed)["error.type"])
				assert.Equal(t, "small", attrs(failed)["gen_ai.request.model"])
				assert.Equal(t, codes.Unset, answered.Status.Code)
				got := attrs(answered)
				assert.NotContains(t, got, "error.type")
				assert.Equal(t, "big", got["gen_ai.request.model"])
				assert.Equal(t, "big", got["gen_ai.response.model"])
				assert.Equal(t, int64(2), got["gen_ai.usage.output_tokens"])

				// The request to the fallback carried the trace context of its
				// own span.
				reqs := second.Requests()
				require.Len(t, reqs, 1)
				sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(reqs[0].Header)))
				assert.Equal(t, answered.SpanContext.SpanID(), sc.SpanID())

				points := rig.metrics(t)["gen_ai.client.operation.duration"].(metricdata.Histogram[float64]).DataPoints
				byModel := map[string]any{}
				for _, p := range points {
					pa := pointAttrs(p.Attributes)
					assert.Equal(t, uint64(1), p.Count)
					byModel[pa["gen_ai.request.model"].(string)] = pa["error.type"]
				}
				assert.Equal(t, map[string]any{"small": tc.errType, "big": nil}, byModel)
			})
		}
	}
}

// A model call that a middleware answers (a cache) reaches no model: it
// makes no chat span, and the run's span still counts it.
func TestTracedModelMiddlewareAnswer(t *testing.T) {
	rig := newTelemetryRig(t)
	srv := newServer(t)
	cached := func(context.Context, *ModelRequest, ModelHandler) (*ModelResponse, error) {
		return &ModelResponse{Model: "cache", Text: "cached", FinishReason: "stop"}, nil
	}
	a := newTestAgent(t, srv, append(rig.options(), WithModelMiddleware(cached))...)
	res, err := a.Run(t.Context(), "hello")
	require.NoError(t, err)
	assert.Equal(t, "cached", res.Text)
	assert.Empty(t, srv.Requests())
	assert.Empty(t, rig.named("chat test-model"))
	run := rig.span(t, "invoke_agent")
	assert.Equal(t, []string{"cache"}, attrs(run)["robby.models"])
	assert.NotContains(t, rig.metrics(t), "gen_ai.client.operation.duration")
}

// With prices, each chat span carries its call's cost, and the run's span
// their sum.
func TestTracedCost(t *testing.T) {
	rig := newTelemetryRig(t)
	srv := newServer(t)
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)).WithUsage(1000, 100).WithUsageDetails(400, 0),
		robbytest.Text("3").WithUsage(2000, 50),
	)
	prices := WithPrices(map[string]Price{"test-model": {Input: 2, CachedInput: 1, Output: 8}})
	a := newTestAgent(t, srv, append(rig.options(), prices, WithTools(addTool))...)
	res, err := a.Run(t.Context(), "1+2?")
	require.NoError(t, err)
	chats := rig.named("chat test-model")
	require.Len(t, chats, 2)
	assert.InDelta(t, 0.0024, attrs(chats[0])["robby.usage.cost"], 1e-12, "600 at 2, 400 cached at 1, 100 at 8, per million")
	assert.InDelta(t, 0.0044, attrs(chats[1])["robby.usage.cost"], 1e-12)
	assert.InDelta(t, 0.0068, attrs(rig.span(t, "invoke_agent"))["robby.usage.cost"], 1e-12)
	assert.InDelta(t, res.Usage.Cost, attrs(rig.span(t, "invoke_agent"))["robby.usage.cost"], 0)
}

// An agent run as a tool has a span of its own, a child of the call's
// span. It is named for the tool, as the GenAI conventions name an agent's
// (invoke_agent {gen_ai.agent.name}), and has the tool's name and
// description.
func TestTracedAgentTool(t *testing.T) {
	rig := newTelemetryRig(t)
	srv := newServer(t)
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("researcher", `{"prompt":"Find facts on Paris"}`)),
		robbytest.Text("Paris has 2,102,650 people."), // the researcher
		robbytest.ToolCalls(robbytest.Call("analyst", `{"Name":"Paris"}`)),
		robbytest.Answer(parisJSON), // the analyst
		robbytest.Text("Paris: done."),
	)
	researcher := newTestAgent(t, srv, rig.options()...)
	analyst := newTestAgent(t, srv, rig.options()...)
	type place struct{ Name string }
	writer := newTestAgent(t, srv, append(rig.options(), WithTools(
		researcher.AsTool("researcher", "Finds facts"),
		AgentTool[place, city](analyst, "analyst", "Describes a city", WithAnswerMode(AnswerNative)),
	))...)
	res, err := writer.Run(t.Context(), "Write about Paris")
	require.NoError(t, err)
	assert.Equal(t, "Paris: done.", res.Text)

	top := rig.span(t, "invoke_agent")
	assert.NotContains(t, attrs(top), "gen_ai.agent.name", "the top run is not a tool")
	for name, description := range map[string]string{"researcher": "Finds facts", "analyst": "Describes a city"} {
		run, call := rig.span(t, "invoke_agent "+name), rig.span(t, "execute_tool "+name)
		got := attrs(run)
		assert.Equal(t, name, got["gen_ai.agent.name"])
		assert.Equal(t, description, got["gen_ai.agent.description"])
		assert.Equal(t, "invoke_agent", got["gen_ai.operation.name"])
		assert.Equal(t, call.SpanContext.SpanID(), run.Parent.SpanID(), "%s's run under its call", name)
		assert.Equal(t, top.SpanContext.SpanID(), call.Parent.SpanID())
	}
}
