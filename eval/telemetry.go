package eval

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The attributes of the eval's spans.
const (
	attrCase   = "robby.eval.case"
	attrRun    = "robby.eval.run"
	attrPassed = "robby.eval.passed"
	attrScore  = "robby.eval.score"
	attrReason = "robby.eval.reason"
	attrRuns   = "robby.eval.runs_passed"
)

// startSpan starts a span under ctx's, or does nothing without a tracer.
func (h *harness) startSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if h.cfg.tracer == nil {
		return ctx, nil
	}
	return h.cfg.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
}

func caseAttrs(name string) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String(attrCase, name)}
}

func runAttrs(name string, run int) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String(attrCase, name), attribute.Int(attrRun, run)}
}

// endSpan ends the span of the eval or of a run.
func endSpan(span trace.Span, passed bool, err error) {
	if span == nil {
		return
	}
	span.SetAttributes(attribute.Bool(attrPassed, passed))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// endCaseSpan ends a case's span with how many of its runs passed.
func endCaseSpan(span trace.Span, passed int) {
	span.SetAttributes(attribute.Int(attrRuns, passed))
	span.End()
}

// endScoreSpan ends an evaluator's span with its score. The reason may
// quote the answer, cut short: an eval's cases are test data, not users'.
func endScoreSpan(span trace.Span, s namedScore) {
	if span == nil {
		return
	}
	span.SetAttributes(attribute.Bool(attrPassed, s.err == nil && s.Pass), attribute.Float64(attrScore, s.Value),
		attribute.String(attrReason, s.Reason))
	if s.err != nil {
		span.SetStatus(codes.Error, s.err.Error())
	}
	span.End()
}
