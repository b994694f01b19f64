package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/robby-go/robby"
)

// otelEnv are the variables -otel reads, through the OTLP exporters and
// the SDK's resource.
var otelEnv = []string{
	"OTEL_EXPORTER_OTLP_ENDPOINT\twith -otel: the collector (default http://localhost:4318); " +
		"OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT and the _TRACES_/_METRICS_ forms apply too",
	"OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES\twith -otel: the service's name (default robby) and attributes",
}

// telemetryFlags are -otel and -trace.
type telemetryFlags struct {
	otel, trace bool
	tree        *treePrinter         // of -trace, once options made it
	provider    trace.TracerProvider // once options made it; nil without -otel and -trace
}

func (f *telemetryFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.otel, "otel", false, "export traces and metrics over OTLP/HTTP (the OTEL_EXPORTER_OTLP_* variables say where)")
	fs.BoolVar(&f.trace, "trace", false, "print the tree of each run's spans to stderr when the run ends")
}

// flushTimeout bounds the export of what is left when the command ends.
const flushTimeout = 5 * time.Second

// options returns the agent's options for the flags. It also returns the
// function that flushes and stops the exporters, to call once the agent is
// closed.
func (f *telemetryFlags) options(ctx context.Context, stderr io.Writer) ([]robby.Option, func(), error) {
	if !f.otel && !f.trace {
		return nil, func() {}, nil
	}
	var (
		topts []sdktrace.TracerProviderOption
		mp    *sdkmetric.MeterProvider
	)
	if f.trace {
		f.tree = newTreePrinter(stderr)
		topts = append(topts, sdktrace.WithSpanProcessor(f.tree))
	}
	if f.otel {
		res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName("robby")),
			resource.WithFromEnv(), resource.WithTelemetrySDK())
		if err != nil {
			return nil, nil, fmt.Errorf("-otel: %w", err)
		}
		spans, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("-otel: %w", err)
		}
		metrics, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("-otel: %w", err)
		}
		topts = append(topts, sdktrace.WithBatcher(spans), sdktrace.WithResource(res))
		mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)), sdkmetric.WithResource(res))
	}
	tp := sdktrace.NewTracerProvider(topts...)
	f.provider = tp
	opts := []robby.Option{robby.WithTracerProvider(tp)}
	if mp != nil {
		opts = append(opts, robby.WithMeterProvider(mp))
	}
	shutdown := func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		err := tp.Shutdown(ctx)
		if mp != nil {
			err = errors.Join(err, mp.Shutdown(ctx))
		}
		if err != nil {
			fmt.Fprintf(stderr, "robby: warning: exporting telemetry: %v\n", err)
		}
	}
	return opts, shutdown, nil
}
