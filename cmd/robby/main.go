// Command robby runs an agent from the command line, with the tools of MCP
// servers, against any OpenAI-compatible endpoint.
//
//	robby run [flags] "prompt"   stream one answer; tool steps go to stderr
//	robby chat [flags]           an interactive conversation with memory; /name runs an MCP prompt
//	robby serve [flags]          serve the agent as an OpenAI-compatible endpoint
//	robby mcp [flags]            serve the agent as an MCP server (tool ask), over stdio or -http
//	robby index -kb FILE DIR...  index folders of documents into a knowledge base
//
// Every subcommand takes -model, -system, -mcp (an mcpServers JSON file, as
// Claude Desktop, Cursor and VS Code write them), -base-url and -api-key,
// and -kb FILE: a knowledge base made by robby index, which the agent
// searches with its search_knowledge tool (-embed-model and -embed-url, or
// ROBBY_EMBEDDINGS_MODEL and ROBBY_EMBEDDINGS_URL, add vector search); run
// and chat take -kb-mode context to add the passages found for each prompt
// to it instead.
// The endpoint and key default to OPENAI_BASE_URL and OPENAI_API_KEY, then
// to Docker Model Runner's http://localhost:12434/engines/v1; the model to
// ROBBY_MODEL, then ai/qwen2.5.
//
// robby chat -session NAME keeps the conversation NAME in a SQLite file
// (-store, default $ROBBY_STORE, else ~/.local/share/robby/conversations.db
// on Linux), saved message by message: run it again with the same name to
// continue.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage:
  robby run [flags] "prompt"   stream one answer; tool steps go to stderr
  robby chat [flags]           an interactive conversation with memory (-session NAME: kept across restarts);
                               /name runs an MCP prompt
  robby serve [flags]          serve the agent as an OpenAI-compatible endpoint
  robby mcp [flags]            serve the agent as an MCP server (tool ask), over stdio or -http
  robby index -kb FILE DIR...  index folders of documents into a knowledge base

Run 'robby <command> -h' for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "robby:", err)
		os.Exit(1)
	}
}

// run dispatches to a subcommand; it is main without the process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return flag.ErrHelp
	}
	switch args[0] {
	case "run":
		return runCmd(ctx, args[1:], stdout, stderr)
	case "chat":
		return chatCmd(ctx, args[1:], stdin, stdout, stderr)
	case "serve":
		return serveCmd(ctx, args[1:], stderr)
	case "mcp":
		return mcpCmd(ctx, args[1:], stdin, stdout, stderr)
	case "index":
		return indexCmd(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}
