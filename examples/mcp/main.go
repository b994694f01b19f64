// Command mcp gives a model the tools of MCP servers. By default they are the
// reference filesystem server, rooted in a folder of its own, and the Docker
// MCP Toolkit's gateway, when the docker CLI has it. With -mcp, they are the
// servers of an mcpServers JSON file (as Claude Desktop, Cursor and VS Code
// write them).
//
//	docker desktop enable model-runner --tcp 12434
//	docker model pull ai/qwen2.5
//	go run ./examples/mcp
//	go run ./examples/mcp -mcp mcp.json "What tools do you have?"
//
// OPENAI_BASE_URL, OPENAI_API_KEY and ROBBY_MODEL choose another endpoint and
// model, such as Ollama's or OpenAI's. The filesystem server runs with npx, so
// Node.js must be installed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/examples/internal/endpoint"
	"github.com/robby-go/robby/mcpconfig"
)

const defaultPrompt = "Write a haiku about Go in haiku.txt, then read the file back and tell me what it says."

func main() {
	config := flag.String("mcp", "", "mcpServers JSON file (default: the filesystem server, and Docker's gateway if present)")
	flag.Parse()
	prompt := strings.Join(flag.Args(), " ")
	if prompt == "" {
		prompt = defaultPrompt
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *config, prompt); err != nil {
		fmt.Fprintln(os.Stderr, "mcp:", err)
		var netErr *net.OpError
		if errors.As(err, &netErr) {
			fmt.Fprintln(os.Stderr, "hint: start Docker Model Runner (docker desktop enable model-runner --tcp 12434), "+
				"or set OPENAI_BASE_URL=http://localhost:11434/v1 ROBBY_MODEL=qwen2.5 for Ollama")
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, config, prompt string) error {
	servers, err := mcpServers(config)
	if err != nil {
		return err
	}
	agent, err := robby.New(
		robby.WithBaseURL(endpoint.BaseURL()),
		robby.WithAPIKey(os.Getenv("OPENAI_API_KEY")),
		robby.WithModel(endpoint.Model()),
		robby.WithSystem("You are a helpful assistant. Use the tools you are given."),
		robby.WithMCP(servers...),
		robby.WithFinalAnswer(),
	)
	if err != nil {
		return err
	}
	defer agent.Close() // ends the servers' subprocesses

	fmt.Println("tools:")
	for _, t := range agent.Tools() {
		fmt.Printf("  %s: %s\n", t.Name(), firstLine(t.Description()))
	}
	fmt.Println("\n›", prompt)
	for ev, err := range agent.Stream(ctx, prompt) {
		switch ev.Kind {
		case robby.EventText:
			fmt.Print(ev.Delta)
		case robby.EventToolCall:
			fmt.Printf("→ %s %s\n", ev.ToolCall.Name, ev.ToolCall.Arguments)
		case robby.EventToolResult:
			fmt.Printf("← %s\n", firstLine(ev.ToolResult.Output))
		case robby.EventDone:
			fmt.Println()
			return err
		}
	}
	return nil
}

// mcpServers loads config, or makes the default servers. They are the
// filesystem server in ./mcp-workspace, and the Docker MCP Toolkit's gateway,
// if the CLI has it. The gateway exposes every server enabled in Docker
// Desktop.
func mcpServers(config string) ([]robby.MCPServer, error) {
	if config != "" {
		return mcpconfig.Load(config)
	}
	dir, err := filepath.Abs("mcp-workspace")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	servers := []robby.MCPServer{
		robby.MCPCommand("fs", "npx", "-y", "@modelcontextprotocol/server-filesystem", dir),
	}
	if exec.Command("docker", "mcp", "version").Run() == nil {
		// The gateway needs Docker's own environment. It is optional, so a
		// stopped Docker Desktop does not stop the example.
		servers = append(servers, robby.MCPCommand("docker", "docker", "mcp", "gateway", "run").WithInheritedEnv().WithOptional())
	}
	return servers, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}
