// Command lookup is the example dataset's lookup tool as an MCP server over
// stdio. It is for robby eval with a real model (mcp.json names it):
//
//	OPENAI_BASE_URL=http://localhost:11434/v1 ROBBY_MODEL=qwen2.5 \
//	  robby eval -mcp examples/eval/mcp.json examples/eval/cases.jsonl -repeat 5 -html report.html
package main

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type country struct {
	Country string `json:"country" jsonschema:"the country's English name"`
}

var capitals = map[string]string{"norway": "Oslo", "sweden": "Stockholm", "denmark": "Copenhagen", "finland": "Helsinki"}

func lookup(_ context.Context, _ *mcp.CallToolRequest, in country) (*mcp.CallToolResult, any, error) {
	capital, ok := capitals[strings.ToLower(in.Country)]
	if !ok {
		return nil, nil, fmt.Errorf("no capital known for %q", in.Country)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: capital}}}, nil, nil
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "lookup", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Look up the capital of a country"}, lookup)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
