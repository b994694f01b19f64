// Command knowledge indexes a folder of Markdown (a small staff handbook) into
// a knowledge base. An agent then answers questions from it, citing the files
// and lines it used. It does so first with the search_knowledge tool, which the
// model calls. Then it uses context mode, where the passages found for the
// question are given to the model with it.
//
// It talks to any OpenAI-compatible endpoint, by default Docker Model Runner on
// this machine. The endpoint serves the chat model and the embedding model:
//
//	docker desktop enable model-runner --tcp 12434
//	docker model pull ai/qwen2.5
//	docker model pull ai/mxbai-embed-large
//	go run ./examples/knowledge
//
// OPENAI_BASE_URL, OPENAI_API_KEY and ROBBY_MODEL choose the chat endpoint and
// model. ROBBY_EMBEDDINGS_MODEL chooses the embedding model, and
// ROBBY_EMBEDDINGS_URL its endpoint, if it is another. With
// ROBBY_EMBEDDINGS_MODEL=none, search is by keyword only.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/openai/openai-go/v3/option"
	"github.com/robby-go/robby"
	"github.com/robby-go/robby/examples/internal/endpoint"
	"github.com/robby-go/robby/knowledge"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Stdout, fromEnv())
	stop()
	if err != nil {
		endpoint.Report(err)
		os.Exit(1)
	}
}

// config is where the models are.
type config struct {
	baseURL, apiKey, model string
	embedURL, embedModel   string // embedModel "" means keyword search only
}

func fromEnv() config {
	c := config{baseURL: endpoint.BaseURL(), apiKey: os.Getenv("OPENAI_API_KEY"), model: endpoint.Model(),
		embedURL: os.Getenv("ROBBY_EMBEDDINGS_URL"), embedModel: os.Getenv("ROBBY_EMBEDDINGS_MODEL")}
	switch c.embedModel {
	case "":
		c.embedModel = "ai/mxbai-embed-large"
	case "none":
		c.embedModel = ""
	}
	if c.embedURL == "" {
		c.embedURL = c.baseURL
	}
	return c
}

// handbook is the folder indexed: the handbook next to this file. It is a path
// from the working directory, which the citations show.
func handbook() string {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "handbook")
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, dir); err == nil {
			return rel
		}
	}
	return dir
}

func run(ctx context.Context, out io.Writer, c config) error {
	dir, err := os.MkdirTemp("", "knowledge-example")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var opts []knowledge.Option
	if c.embedModel != "" {
		opts = append(opts, knowledge.WithEmbedder(knowledge.NewOpenAIEmbedder(c.embedModel,
			option.WithBaseURL(c.embedURL), option.WithAPIKey(c.apiKey))))
	}
	kb, err := knowledge.Open(filepath.Join(dir, "kb.db"), opts...)
	if err != nil {
		return err
	}
	defer kb.Close()
	rep, err := kb.AddDir(ctx, handbook())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "indexed %d files: %d chunks, %d embedded\n", rep.Added, rep.Chunks, rep.Embedded)

	agent, err := robby.New(
		robby.WithBaseURL(c.baseURL), robby.WithAPIKey(c.apiKey), robby.WithModel(c.model),
		robby.WithSystem("You answer staff questions from the handbook only, briefly, "+
			"citing the passages you use in brackets, like [handbook/leave.md:3-6]."),
		robby.WithTools(knowledge.Tool(kb)),
	)
	if err != nil {
		return err
	}
	defer agent.Close()

	// Tool mode: the model searches when it needs to.
	q := "How many days of holiday do I get, and can I carry some over?"
	res, err := agent.Run(ctx, q)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n› %s (tool mode)\n%s\n", q, res.Text)
	for _, call := range res.ToolCalls {
		fmt.Fprintf(out, "  searched: %s\n", call.Call.Arguments)
	}

	// Context mode: the passages for the question come with it, in a
	// fresh conversation.
	agent.Reset()
	q = "Until when can I submit an expense claim?"
	opt, hits, err := knowledge.ContextFor(ctx, kb, q, knowledge.ContextOptions{Limit: 3, MaxTokens: 600})
	if err != nil {
		return err
	}
	res, err = agent.Run(ctx, q, opt)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n› %s (context mode)\n%s\n", q, res.Text)
	var given []string
	for _, h := range hits {
		given = append(given, h.Citation())
	}
	fmt.Fprintf(out, "  passages given: %s\n", strings.Join(given, ", "))
	return nil
}
