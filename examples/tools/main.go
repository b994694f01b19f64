// Command tools gives a model two typed local tools, say_hello and
// vulcan_salute. It uses them twice. First step by step, with the building
// blocks: ask for tool calls, run them, read the answer. Then in one call, with
// the ReAct loop of Run.
//
// It talks to any OpenAI-compatible endpoint, by default Docker Model Runner on
// this machine:
//
//	docker desktop enable model-runner --tcp 12434
//	docker model pull ai/qwen2.5
//	go run ./examples/tools
//
// OPENAI_BASE_URL, OPENAI_API_KEY and ROBBY_MODEL choose another endpoint and
// model, such as Ollama's or OpenAI's.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/openai/openai-go/v3"
	"github.com/robby-go/robby"
	"github.com/robby-go/robby/examples/internal/endpoint"
)

// person is the arguments of both tools. NewTool infers the JSON Schema the
// model sees from it: the json tag names the field, the jsonschema tag
// describes it. The model's arguments are checked against that schema and
// decoded into a person before the tool is called.
type person struct {
	Name string `json:"name" jsonschema:"the person's name"`
}

var (
	sayHello = robby.NewTool("say_hello", "Say hello to someone",
		func(ctx context.Context, p person) (string, error) {
			return fmt.Sprintf("👋 Hello %s! 🙂", p.Name), nil
		})

	vulcanSalute = robby.NewTool("vulcan_salute", "Make a Vulcan salute to someone",
		func(ctx context.Context, p person) (string, error) {
			return fmt.Sprintf("🖖 Live long and prosper %s", p.Name), nil
		})
)

func main() {
	// Ctrl-C cancels the context, which stops the request in flight.
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
		// Temperature 0 makes tool calling as steady as the model allows;
		// ParallelToolCalls lets it call both tools in one turn.
		robby.WithParams(openai.ChatCompletionNewParams{
			Temperature:       openai.Float(0),
			ParallelToolCalls: openai.Bool(true),
		}),
		robby.WithTools(sayHello, vulcanSalute),
	)
	if err != nil {
		return err
	}
	defer agent.Close()

	// 1. The building blocks, one step at a time.
	fmt.Println("— building blocks —")
	agent.AddMessages(openai.UserMessage("Say hello to Alice and make a Vulcan salute to Sarek"))

	// ToolsCompletion offers the tools and returns the calls the model
	// wants. They are not run yet.
	calls, err := agent.ToolsCompletion(ctx)
	if err != nil {
		return err
	}
	for _, c := range calls {
		fmt.Printf("call:   %s %s\n", c.Name, c.Arguments)
	}

	// ExecuteToolCalls runs them, concurrently, and adds their results to
	// the conversation. A failed call is not an error here: its result
	// tells the model what went wrong.
	results, err := agent.ExecuteToolCalls(ctx, calls)
	if err != nil {
		return err
	}
	for _, r := range results {
		fmt.Printf("result: %s → %s\n", r.Call.Name, r.Output)
	}

	// The model reads the results and answers.
	answer, err := agent.ChatCompletion(ctx)
	if err != nil {
		return err
	}
	fmt.Println("answer:", answer)

	// 2. The same in one call: Run loops on the steps above until the
	// model answers without calling a tool. Reset starts a new
	// conversation first.
	fmt.Println("\n— Run —")
	agent.Reset()
	res, err := agent.Run(ctx, "Say hello to Bob and make a Vulcan salute to Spock")
	if err != nil {
		return err
	}
	for _, r := range res.ToolCalls {
		fmt.Printf("tool:   %s %s → %s\n", r.Call.Name, r.Call.Arguments, r.Output)
	}
	fmt.Println("answer:", res.Text)
	fmt.Printf("(%d turns, %d tokens)\n", res.Turns, res.Usage.TotalTokens)
	return nil
}
