package robby_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

// scripted starts a fake model that gives replies in order. Real programs
// use the base URL of a real endpoint instead.
func scripted(replies ...robbytest.Reply) *robbytest.Server {
	srv := robbytest.NewServer()
	srv.Reply(replies...)
	return srv
}

type greeting struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

var sayHello = robby.NewTool("say_hello", "Say hello to someone",
	func(_ context.Context, in greeting) (string, error) {
		return "👋 Hello " + in.Name + "!", nil
	})

func Example() {
	model := scripted(
		robbytest.ToolCalls(robbytest.Call("say_hello", `{"name":"Bob"}`)),
		robbytest.Text("I said hello to Bob."),
	)
	defer model.Close()

	agent, err := robby.New(
		robby.WithBaseURL(model.URL),
		robby.WithModel("ai/qwen2.5"),
		robby.WithTools(sayHello),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()

	res, err := agent.Run(context.Background(), "Say hello to Bob")
	if err != nil {
		log.Fatal(err)
	}
	for _, call := range res.ToolCalls {
		fmt.Printf("%s(%s) = %s\n", call.Call.Name, call.Call.Arguments, call.Output)
	}
	fmt.Println(res.Text)
	// Output:
	// say_hello({"name":"Bob"}) = 👋 Hello Bob!
	// I said hello to Bob.
}

func ExampleAgent_Stream() {
	model := scripted(
		robbytest.ToolCalls(robbytest.Call("say_hello", `{"name":"Spock"}`)),
		robbytest.Text("Done: Spock was greeted."),
	)
	defer model.Close()
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("ai/qwen2.5"), robby.WithTools(sayHello))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()

	for ev, err := range agent.Stream(context.Background(), "Greet Spock") {
		switch ev.Kind {
		case robby.EventText:
			fmt.Print(ev.Delta)
		case robby.EventToolCall:
			fmt.Printf("→ %s %s\n", ev.ToolCall.Name, ev.ToolCall.Arguments)
		case robby.EventToolResult:
			fmt.Printf("← %s\n", ev.ToolResult.Output)
		case robby.EventDone:
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("\n%d turns\n", ev.Result.Turns)
		}
	}
	// Output:
	// → say_hello {"name":"Spock"}
	// ← 👋 Hello Spock!
	// Done: Spock was greeted.
	// 2 turns
}

func ExampleNewTool() {
	type weatherIn struct {
		City string `json:"city" jsonschema:"the city name"`
		Unit string `json:"unit,omitempty" jsonschema:"celsius or fahrenheit"`
	}
	type weatherOut struct {
		City        string  `json:"city"`
		Temperature float64 `json:"temperature"`
	}
	weather := robby.NewTool("get_weather", "Current weather in a city",
		func(_ context.Context, in weatherIn) (weatherOut, error) {
			return weatherOut{City: in.City, Temperature: 21.5}, nil
		})
	fmt.Println(weather.Name(), weather.Parameters()["required"])
	// Output: get_weather [city]
}

func ExampleFuncTool() {
	shout := robby.FuncTool("shout", "Upper-cases a text",
		map[string]any{
			"type":       "object",
			"properties": map[string]any{"text": map[string]any{"type": "string"}},
			"required":   []string{"text"},
		},
		func(_ context.Context, args map[string]any) (any, error) {
			return strings.ToUpper(args["text"].(string)), nil
		})
	model := scripted(robbytest.ToolCalls(robbytest.Call("shout", `{"text":"hi"}`)), robbytest.Text("HI"))
	defer model.Close()
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"), robby.WithTools(shout))
	if err != nil {
		log.Fatal(err)
	}
	res, err := agent.Run(context.Background(), "shout hi")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.ToolCalls[0].Output)
	// Output: HI
}

func ExampleAgent_ChatCompletionStream() {
	model := scripted(robbytest.Text("Hello from a streamed answer"))
	defer model.Close()
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"), robby.WithSystem("Be kind."))
	if err != nil {
		log.Fatal(err)
	}
	agent.AddMessages(openai.UserMessage("Hi!"))
	_, err = agent.ChatCompletionStream(context.Background(), func(delta string) error {
		fmt.Printf("[%s]", delta)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	fmt.Println(len(agent.Messages()), "messages")
	// Output:
	// [Hello ][from ][a ][streamed ][answer]
	// 3 messages
}

func ExampleAgent_ToolsCompletion() {
	model := scripted(robbytest.ToolCalls(
		robbytest.Call("say_hello", `{"name":"Bob"}`),
		robbytest.Call("say_hello", `{"name":"Alice"}`),
	))
	defer model.Close()
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"), robby.WithTools(sayHello))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	agent.AddMessages(openai.UserMessage("Greet Bob and Alice"))
	calls, err := agent.ToolsCompletion(ctx)
	if err != nil {
		log.Fatal(err)
	}
	results, err := agent.ExecuteToolCalls(ctx, calls)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range results {
		fmt.Println(r.Output)
	}
	// Output:
	// 👋 Hello Bob!
	// 👋 Hello Alice!
}

func ExampleAgent_Clone() {
	model := scripted(robbytest.Text("Paris."), robbytest.Text("Rome."))
	defer model.Close()
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"), robby.WithSystem("Answer in one word."))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for _, q := range []string{"Capital of France?", "Capital of Italy?"} {
		conv := agent.Clone() // a conversation of its own, same model and tools
		res, err := conv.Run(ctx, q)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Text, len(conv.Messages()))
	}
	fmt.Println(len(agent.Messages()))
	// Output:
	// Paris. 3
	// Rome. 3
	// 1
}

func ExampleErrMaxTurns() {
	model := scripted(
		robbytest.ToolCalls(robbytest.Call("say_hello", `{"name":"Bob"}`)),
		robbytest.ToolCalls(robbytest.Call("say_hello", `{"name":"Bob"}`)),
	)
	defer model.Close()
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"),
		robby.WithTools(sayHello), robby.WithMaxTurns(2))
	if err != nil {
		log.Fatal(err)
	}
	res, err := agent.Run(context.Background(), "Greet Bob, forever")
	fmt.Println(errors.Is(err, robby.ErrMaxTurns), res.Turns, len(res.ToolCalls))
	// Output: true 2 2
}

func ExampleWithMCP() {
	// An MCP server in this process; MCPCommand, MCPStreamableHTTP, MCPSSE
	// and MCPWebSocket reach servers elsewhere in the same way.
	server := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "v1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "greet", Description: "Greets someone"},
		func(_ context.Context, _ *mcp.CallToolRequest, in greeting) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hi " + in.Name}}}, nil, nil
		})
	clientSide, serverSide := mcp.NewInMemoryTransports()
	session, err := server.Connect(context.Background(), serverSide, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	model := scripted(robbytest.ToolCalls(robbytest.Call("greet", `{"name":"Ada"}`)), robbytest.Text("Done."))
	defer model.Close()
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"),
		robby.WithMCP(robby.MCPTransport("greeter", clientSide)))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	res, err := agent.Run(context.Background(), "Greet Ada")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.ToolCalls[0].Call.Name, "→", res.ToolCalls[0].Output)
	// Output: greet → Hi Ada
}

func ExampleWithApproval() {
	model := scripted(
		robbytest.ToolCalls(robbytest.Call("say_hello", `{"name":"Bob"}`), robbytest.Call("say_hello", `{"name":"Mallory"}`)),
		robbytest.Text("I could greet Bob only."),
	)
	defer model.Close()
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"), robby.WithTools(sayHello),
		robby.WithApproval(func(_ context.Context, call robby.ToolCall) error {
			if strings.Contains(call.Arguments, "Mallory") {
				return errors.New("not allowed to greet Mallory")
			}
			return nil
		}))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	res, err := agent.Run(context.Background(), "Greet Bob and Mallory")
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range res.ToolCalls {
		fmt.Println(c.Output)
	}
	fmt.Println(res.Text)
	// Output:
	// 👋 Hello Bob!
	// Error: tool "say_hello": robby: tool call not approved: not allowed to greet Mallory
	// I could greet Bob only.
}

func ExampleAgent_ChatCompletion() {
	model := scripted(robbytest.Text("Bonjour !"))
	defer model.Close()
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"), robby.WithSystem("Answer in French."))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	agent.AddMessages(openai.UserMessage("Hello!"))
	answer, err := agent.ChatCompletion(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(answer, len(agent.Messages()))
	// Output: Bonjour ! 3
}
