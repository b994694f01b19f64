package eval_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/eval"
	"github.com/robby-go/robby/robbytest/agenttest"
)

// TestSpans: each case, run and evaluator is a span under the eval's, and
// the agent's own spans come under their run's.
func TestSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(t.Context()) })
	srv := flaky(t, 1, 2)
	d := capitals(2)
	d.Evaluators = append(d.Evaluators, eval.MaxTurns(1))
	_, err := eval.Run(t.Context(), d, newAgent(t, srv, robby.WithTracerProvider(tp)),
		eval.WithRepeat(2), eval.WithTracerProvider(tp))
	require.NoError(t, err)

	spans := exp.GetSpans()
	byID := map[string]tracetest.SpanStub{}
	count := map[string]int{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
		count[s.Name]++
	}
	parent := func(s tracetest.SpanStub) string { return byID[s.Parent.SpanID().String()].Name }
	assert.Equal(t, map[string]int{
		"eval capitals": 1, "eval_case case-0": 1, "eval_case case-1": 1,
		"eval_run case-0": 2, "eval_run case-1": 2, "evaluate contains": 4, "evaluate max_turns": 4,
		"invoke_agent": 4, "chat " + agenttest.Model: 4,
	}, count)
	passed := 0
	for _, s := range spans {
		switch s.Name {
		case "eval_case case-0", "eval_case case-1":
			assert.Equal(t, "eval capitals", parent(s))
		case "eval_run case-0":
			assert.Equal(t, "eval_case case-0", parent(s))
		case "evaluate contains", "evaluate max_turns", "invoke_agent":
			assert.Contains(t, []string{"eval_run case-0", "eval_run case-1"}, parent(s), s.Name)
		}
		for _, a := range s.Attributes {
			if s.Name == "evaluate contains" && a.Key == "robby.eval.passed" && a.Value.AsBool() {
				passed++
			}
		}
	}
	assert.Equal(t, 2, passed, "the contains spans say which passed")
}
