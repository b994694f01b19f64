package robby_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

// A server's prompt starts a conversation, and one of its resources is
// attached to the next question.
func ExampleAgent_MCPPrompt() {
	// An MCP server with a prompt and a resource, in memory for the example.
	server := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	server.AddPrompt(&mcp.Prompt{Name: "review", Arguments: []*mcp.PromptArgument{{Name: "file", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "Review " + req.Params.Arguments["file"] + " for typos."}},
			}}, nil
		})
	server.AddResource(&mcp.Resource{Name: "readme", URI: "docs://readme"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "docs://readme", Text: "Robby is an agnet library."}}}, nil
		})
	clientT, serverT := mcp.NewInMemoryTransports()
	session, err := server.Connect(context.Background(), serverT, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	model := robbytest.NewServer() // a scripted model
	defer model.Close()
	model.Reply(robbytest.Text("Which file?"), robbytest.Text(`"agnet" should be "agent".`))

	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"),
		robby.WithMCP(robby.MCPTransport("docs", clientT)))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	ctx := context.Background()

	msgs, err := agent.MCPPrompt(ctx, "docs", "review", map[string]string{"file": "README"})
	if err != nil {
		log.Fatal(err)
	}
	agent.AddMessages(msgs...)
	res, err := agent.Resume(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text)

	if err := agent.AttachMCPResource(ctx, "docs", "docs://readme"); err != nil {
		log.Fatal(err)
	}
	res, err = agent.Run(ctx, "This one.")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text)
	// Output:
	// Which file?
	// "agnet" should be "agent".
}
