package robby_test

import (
	"context"
	"fmt"
	"log"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

// A traced agent: each run, model call and tool call is a span. Here the
// spans go to an in-memory exporter; a program would export them over
// OTLP (go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp).
func ExampleWithTracerProvider() {
	model := scripted(
		robbytest.ToolCalls(robbytest.Call("say_hello", `{"name":"Bob"}`)).WithUsage(40, 10),
		robbytest.Text("I said hello to Bob.").WithUsage(60, 8),
	)
	defer model.Close()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())

	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("qwen3"),
		robby.WithTools(sayHello), robby.WithTracerProvider(tp))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	if _, err := agent.Run(context.Background(), "Say hello to Bob"); err != nil {
		log.Fatal(err)
	}
	for _, s := range spans.GetSpans() { // in the order they ended
		for _, kv := range s.Attributes {
			if kv.Key == "gen_ai.usage.output_tokens" {
				fmt.Printf("%s: %d output tokens\n", s.Name, kv.Value.AsInt64())
			}
		}
		if s.Name == "execute_tool say_hello" {
			fmt.Println(s.Name)
		}
	}
	// Output:
	// chat qwen3: 10 output tokens
	// execute_tool say_hello
	// chat qwen3: 8 output tokens
	// invoke_agent: 18 output tokens
}
