package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/mcpserver"
	"github.com/robby-go/robby/robbytest"
)

// An agent served over MCP, called by a go-sdk client. A real program
// serves it with srv.Run(ctx, &mcp.StdioTransport{}) or mounts srv on an
// HTTP server.
func Example() {
	model := robbytest.NewServer() // a scripted model, for the example
	defer model.Close()
	model.Reply(robbytest.Text("Paris."))

	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	srv, err := mcpserver.New(agent, mcpserver.Options{Name: "geographer"})
	if err != nil {
		log.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clientT, serverT := mcp.NewInMemoryTransports()
	go srv.Run(ctx, serverT)

	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil)
	session, err := client.Connect(ctx, clientT, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{
		Name:      mcpserver.ToolName,
		Arguments: map[string]any{"prompt": "What is the capital of France?"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output: Paris.
}

// A typed ask: with an output schema, the host gets the answer as
// structured content, validated against the schema (and repaired by the
// model if it did not fit).
func Example_outputSchema() {
	model := robbytest.NewServer() // a scripted model, for the example
	defer model.Close()
	model.Reply(robbytest.Answer(`{"name": "Paris", "population": 2102650}`))

	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	srv, err := mcpserver.New(agent, mcpserver.Options{OutputSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name":       map[string]any{"type": "string"},
			"population": map[string]any{"type": "integer", "minimum": 0},
		},
		"required": []any{"name", "population"},
	}})
	if err != nil {
		log.Fatal(err) // a schema that is not a valid schema of an object
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clientT, serverT := mcp.NewInMemoryTransports()
	go srv.Run(ctx, serverT)
	session, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{
		Name:      mcpserver.ToolName,
		Arguments: map[string]any{"prompt": "Describe Paris."},
	})
	if err != nil {
		log.Fatal(err)
	}
	city, _ := json.Marshal(res.StructuredContent)
	fmt.Println(string(city))
	// Output: {"name":"Paris","population":2102650}
}
