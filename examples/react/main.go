// Command react runs the ReAct loop within limits and prints every event of the
// run as it happens. Events are the model's reasoning and text, each tool call
// and its result, and the end of each turn. Then it prints the totals.
//
// The model has a calculator (add, multiply) and a lookup tool that fails on
// keys it does not know. A failure is sent back to the model as the call's
// result. The model can so correct itself on the next turn.
//
// It talks to any OpenAI-compatible endpoint, by default Docker Model Runner on
// this machine:
//
//	docker desktop enable model-runner --tcp 12434
//	docker model pull ai/qwen2.5
//	go run ./examples/react
//
// OPENAI_BASE_URL, OPENAI_API_KEY and ROBBY_MODEL choose another endpoint and
// model, such as Ollama's or OpenAI's.
package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/robby-go/robby"
	"github.com/robby-go/robby/examples/internal/endpoint"
)

// operands is the arguments of the calculator tools.
type operands struct {
	A float64 `json:"a" jsonschema:"the first number"`
	B float64 `json:"b" jsonschema:"the second number"`
}

// facts is what the lookup tool knows.
var facts = map[string]float64{
	"enterprise_crew":   430,
	"voyager_crew":      141,
	"ration_kg_per_day": 1.8,
}

var (
	add = robby.NewTool("add", "Add two numbers",
		func(ctx context.Context, in operands) (float64, error) {
			return in.A + in.B, nil
		})

	multiply = robby.NewTool("multiply", "Multiply two numbers",
		func(ctx context.Context, in operands) (float64, error) {
			return in.A * in.B, nil
		})

	lookup = robby.NewTool("lookup", "Look up a figure about starships by its key, such as enterprise_crew",
		func(ctx context.Context, in struct {
			Key string `json:"key" jsonschema:"the key of the figure"`
		}) (float64, error) {
			// Pretend to query a slow database, giving up if the context
			// ends first: WithToolTimeout, Ctrl-C, or the run stopping.
			select {
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
				return 0, context.Cause(ctx)
			}
			v, ok := facts[in.Key]
			if !ok {
				// The model reads this error and may try a known key.
				keys := slices.Sorted(maps.Keys(facts))
				return 0, fmt.Errorf("no figure %q; the keys are: %s", in.Key, strings.Join(keys, ", "))
			}
			return v, nil
		})
)

func main() {
	// Ctrl-C cancels the context, which stops the run: the request in
	// flight and the tools that run.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx)
	stop()
	if err != nil {
		endpoint.Report(err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	agent, err := robby.New(
		robby.WithBaseURL(endpoint.BaseURL()),
		robby.WithAPIKey(os.Getenv("OPENAI_API_KEY")), // local servers need none
		robby.WithModel(endpoint.Model()),
		robby.WithSystem("You answer with the tools: look figures up, and compute with add and multiply, never in your head."),
		robby.WithParams(openai.ChatCompletionNewParams{Temperature: openai.Float(0)}),
		robby.WithTools(add, multiply, lookup),
		// The limits of a run:
		robby.WithMaxTurns(5),                // at most 5 model requests,
		robby.WithMaxToolCallsPerTurn(3),     // at most 3 tool calls run per turn,
		robby.WithToolTimeout(2*time.Second), // each for at most 2 seconds,
		robby.WithFinalAnswer(),              // and the 5th turn offers no tools: it must answer.
	)
	if err != nil {
		return err
	}
	defer agent.Close()

	prompt := "How many kilograms of food do the crews of the Enterprise and of Voyager eat together in a week?"
	fmt.Println("prompt:", prompt)

	var (
		res    *robby.Result
		runErr error
		open   robby.EventKind // the kind of the deltas being printed, if any
	)
	for ev, err := range agent.Stream(ctx, prompt) {
		// Deltas of a kind continue their line; any other event ends it.
		if open != 0 && ev.Kind != open {
			fmt.Println()
			open = 0
		}
		switch ev.Kind {
		case robby.EventText, robby.EventReasoning:
			// Pieces of the answer, or of the model's reasoning for the
			// providers that send it, printed as they come.
			if open == 0 {
				fmt.Printf("[turn %d] %-11s ", ev.Turn, ev.Kind)
				open = ev.Kind
			}
			fmt.Print(ev.Delta)
		case robby.EventToolCall:
			fmt.Printf("[turn %d] %-11s %s %s\n", ev.Turn, ev.Kind, ev.ToolCall.Name, ev.ToolCall.Arguments)
		case robby.EventToolResult:
			fmt.Printf("[turn %d] %-11s %s → %s\n", ev.Turn, ev.Kind, ev.ToolCall.Name, ev.ToolResult.Output)
		case robby.EventTurnEnd:
			fmt.Printf("[turn %d] %-11s %d tokens\n", ev.Turn, ev.Kind, ev.Usage.TotalTokens)
		case robby.EventDone:
			// Always the last event: the result, with the run's error.
			res, runErr = ev.Result, err
		}
	}
	// A model that still calls tools on its last turn ends the run with
	// ErrMaxTurns. The partial result is worth printing all the same.
	if runErr != nil && !errors.Is(runErr, robby.ErrMaxTurns) {
		return runErr
	}

	fmt.Println("\n— totals —")
	if runErr != nil {
		fmt.Println("stopped:", runErr)
	}
	fmt.Println("answer:", res.Text)
	fmt.Println("turns: ", res.Turns)
	for _, r := range res.ToolCalls {
		status := "ok"
		if r.Err != nil {
			status = r.Err.Error()
		}
		fmt.Printf("  %-8s %-28s %6v  %s\n", r.Call.Name, r.Call.Arguments, r.Duration.Round(time.Millisecond), status)
	}
	fmt.Printf("usage:  %d prompt + %d completion = %d tokens\n",
		res.Usage.PromptTokens, res.Usage.CompletionTokens, res.Usage.TotalTokens)
	return nil
}
