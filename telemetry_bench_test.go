package robby_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/robby-go/robby"
)

// benchTelemetry returns the options of an agent traced and metered by the
// OTel SDK, set up as a program would. Spans are batched to an exporter
// that drops them; metrics are aggregated for a reader.
func benchTelemetry(b *testing.B) []robby.Option {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		tp.Shutdown(context.Background())
		mp.Shutdown(context.Background())
	})
	return []robby.Option{robby.WithTracerProvider(tp), robby.WithMeterProvider(mp)}
}

// BenchmarkTelemetry runs the work of BenchmarkRun3Turns (three turns,
// three tool calls) and of BenchmarkStream5000 (5,000 chunks). "off" runs
// it without telemetry, the path of every agent built without a provider.
// "sdk" runs it with the SDK recording every span and metric. Run each on
// its own (-bench 'BenchmarkTelemetry/run3/off$'), in rounds with the same
// benchmarks of the main branch: see docs/BENCHMARKS.md.
func BenchmarkTelemetry(b *testing.B) {
	ctx := context.Background()
	for _, mode := range []string{"off", "sdk"} {
		options := func(b *testing.B) []robby.Option {
			if mode == "sdk" {
				return benchTelemetry(b)
			}
			return nil
		}
		b.Run("run3/"+mode, func(b *testing.B) {
			srv := newRun3Server(b)
			a := newRun3Agent(b, srv.URL, benchRobbyTools(), options(b)...)
			b.ReportAllocs()
			for b.Loop() {
				a.Reset()
				robbyRun3(b, ctx, a)
			}
		})
		b.Run("stream5000/"+mode, func(b *testing.B) {
			srv, _ := newStream5000Server(b)
			a := newRun3Agent(b, srv.URL, benchRobbyTools(), options(b)...)
			b.ReportAllocs()
			for b.Loop() {
				a.Reset()
				robbyStream5000(b, ctx, a)
			}
		})
	}
}
