// Command robby runs an agent from the command line, with the tools of MCP
// servers, against any OpenAI-compatible endpoint.
//
//	robby run [flags] "prompt"   stream one answer; tool steps go to stderr
//	robby chat [flags]           an interactive conversation with memory; /name runs an MCP prompt
//	robby serve [flags]          serve the agent as an OpenAI-compatible endpoint
//	robby mcp [flags]            serve the agent as an MCP server (tool ask), over stdio or -http
//	robby index -kb FILE DIR...  index folders of documents into a knowledge base
//	robby eval [flags] FILE      run a dataset of cases (JSONL or YAML) on the agent and report how it did
//	robby worker -temporal HOST:PORT [flags]  serve the agent to durable runs on Temporal
//
// Every subcommand takes -model, -system, -mcp, -base-url, -api-key and -kb.
// -mcp names an mcpServers JSON file, as Claude Desktop, Cursor and VS Code
// write them. -kb FILE names a knowledge base made by robby index, which the
// agent searches with its search_knowledge tool. -embed-model and -embed-url
// (or ROBBY_EMBEDDINGS_MODEL and ROBBY_EMBEDDINGS_URL) add vector search. With
// -kb-mode context, run and chat add the passages found for each prompt to it
// instead.
//
// -budget-calls, -budget-tokens and -budget-cost bound what each answer spends
// on model requests. The exit status is 1 when one stops it. -prices FILE gives
// each model's price per million tokens, as JSON such as {"gpt-4o": {"input":
// 2.5, "cached_input": 1.25, "output": 10}}. Run and chat then print what each
// answer cost on stderr.
//
// -otel exports traces and metrics over OTLP/HTTP, where the standard
// OTEL_EXPORTER_OTLP_* variables say. -trace prints the tree of each run's
// spans to stderr.
//
// The endpoint and key default to OPENAI_BASE_URL and OPENAI_API_KEY, then to
// Docker Model Runner's http://localhost:12434/engines/v1. The model defaults
// to ROBBY_MODEL, then ai/qwen2.5. 'robby <command> -h' lists a command's flags
// and the environment variables it reads.
//
// robby run -schema FILE (a JSON Schema) prints only the answer: one line of
// JSON, ready for jq. The answer is validated against the schema. If it does
// not fit, the model repairs it, up to -max-repairs times. -answer-mode chooses
// how it is asked for (auto, native, tool, prompted). robby mcp -schema FILE
// makes ask a typed tool. The schema is its output schema, and each answer,
// asked for the same way, is structured content.
//
// robby serve listens on 127.0.0.1:8080. To listen on another interface it
// needs a bearer token, or -insecure-no-token. The token comes from -token,
// -token-file, or ROBBY_TOKEN (which keeps it out of ps). Each token is one
// user's (-token USER:TOKEN, repeated for more users). With -store FILE, the
// responses of POST /v1/responses are kept in that SQLite file, each user's
// apart. They can be continued by previous_response_id, across restarts.
//
// robby eval FILE runs a dataset of cases on the agent the flags build, -repeat
// times each. Cases are JSONL or YAML, each with the checks it names (see
// docs/EVALS.md). It prints a table of pass rates, pass^k, tokens, cost and
// latency. It writes the report with -o (JSON) and -html (a page). -baseline
// compares it with an earlier -o. It exits with status 1 when a case failed or
// regressed (-fail-on), 2 for a bad command line. Without an endpoint, cases
// with a script play against a scripted model.
//
// robby run -temporal HOST:PORT "prompt" runs durably on Temporal. The run is a
// workflow on the task queue -task-queue (default robby). It is served by
// 'robby worker -temporal HOST:PORT', which alone needs the model's flags and
// keys. The run survives the kill of its worker. -workflow-id ID names it, or
// re-attaches to it. With -schema FILE, the answer is asked for natively and
// printed as one line of JSON that fits it. robby serve -temporal HOST:PORT runs the endpoint's
// background responses ("background": true) as such runs, on the same workers.
// See docs/DURABLE.md.
//
// robby chat -session NAME keeps the conversation NAME in a SQLite file, saved
// message by message. The file is -store, default $ROBBY_STORE, else
// ~/.local/share/robby/conversations.db on Linux. Run it again with the same
// name to continue.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

const usage = `usage:
  robby run [flags] "prompt"   stream one answer; tool steps go to stderr
  robby chat [flags]           an interactive conversation with memory (-session NAME: kept across restarts);
                               /name runs an MCP prompt
  robby serve [flags]          serve the agent as an OpenAI-compatible endpoint
  robby mcp [flags]            serve the agent as an MCP server (tool ask), over stdio or -http
  robby index -kb FILE DIR...  index folders of documents into a knowledge base
  robby eval [flags] FILE      run a dataset of cases (JSONL or YAML) on the agent and report how it did
  robby worker -temporal HOST:PORT [flags]
                               serve the agent to durable runs on Temporal ('robby run -temporal HOST:PORT' starts one)

Run 'robby <command> -h' for a command's flags and environment variables.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(exitCode(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr), os.Stderr))
}

// exitCode reports err, if it was not shown already, and returns the process's
// exit status. That is 2 for a misused command line, 1 for a failure.
func exitCode(err error, stderr io.Writer) int {
	var shown shownError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &shown):
		return 1
	case errors.Is(err, flag.ErrHelp):
		return 2
	}
	report(stderr, err)
	var usageErr usageError
	if errors.As(err, &usageErr) {
		return 2
	}
	return 1
}

// report prints err with one "robby: " in front: the library's errors
// begin with one of their own.
func report(w io.Writer, err error) {
	fmt.Fprintln(w, "robby:", oneRobby(err.Error()))
}

// oneRobby removes the "robby: " that begins msg or any of its parts.
func oneRobby(msg string) string {
	msg = strings.TrimPrefix(msg, "robby: ")
	return strings.ReplaceAll(msg, ": robby: ", ": ")
}

// shownError is an error the user has seen already: it only sets the exit
// status.
type shownError struct{ error }

// usageError is a command line that does not parse.
type usageError struct{ error }

// run dispatches to a subcommand; it is main without the process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return flag.ErrHelp
	}
	var err error
	switch args[0] {
	case "run":
		err = runCmd(ctx, args[1:], stdout, stderr)
	case "chat":
		err = chatCmd(ctx, args[1:], stdin, stdout, stderr)
	case "serve":
		err = serveCmd(ctx, args[1:], stdout, stderr)
	case "mcp":
		err = mcpCmd(ctx, args[1:], stdin, stdout, stderr)
	case "index":
		err = indexCmd(ctx, args[1:], stdout, stderr)
	case "eval":
		err = evalCmd(ctx, args[1:], stdout, stderr)
	case "worker":
		err = workerCmd(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return usageError{fmt.Errorf("unknown command %q", args[0])}
	}
	if errors.Is(err, errHelpShown) {
		return nil
	}
	return err
}
