package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/openai/openai-go/v3/option"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/knowledge"
)

// kbFlags choose a knowledge base, the model that embeds it and, for run
// and chat, how the agent uses it.
type kbFlags struct {
	file, embedModel, embedURL string
	mode                       string // "tool" or "context"
	modes                      bool   // the command takes -kb-mode
	creates                    bool   // the command makes -kb if missing (robby index)
}

func (f *kbFlags) register(fs *flag.FlagSet) {
	if f.creates {
		fs.StringVar(&f.file, "kb", "", "knowledge base `file` (SQLite) to index into, made if missing")
	} else {
		fs.StringVar(&f.file, "kb", "", "knowledge base `file` (SQLite), made by robby index, that the agent searches with the search_knowledge tool")
	}
	fs.StringVar(&f.embedModel, "embed-model", "",
		"embedding model for vector search; empty or none: keyword search only (env ROBBY_EMBEDDINGS_MODEL)")
	fs.StringVar(&f.embedURL, "embed-url", "",
		"embeddings endpoint, default the chat endpoint (env ROBBY_EMBEDDINGS_URL)")
	f.mode = "tool"
	if f.modes {
		fs.StringVar(&f.mode, "kb-mode", "tool", "how the agent uses -kb: tool (it calls search_knowledge) or "+
			"context (the passages found for each prompt are added to it)")
	}
}

// contextFor returns the run options of the context mode for prompt. The
// passages found become a system message for that run.
func (f *kbFlags) contextFor(ctx context.Context, kb *knowledge.Base, prompt string) ([]robby.RunOption, error) {
	if kb == nil || f.mode != "context" {
		return nil, nil
	}
	opt, _, err := knowledge.ContextFor(ctx, kb, prompt, knowledge.ContextOptions{})
	if err != nil {
		return nil, err
	}
	return []robby.RunOption{opt}, nil
}

// open opens the knowledge base, with an embedder if a model is set. The
// embeddings endpoint defaults to baseURL, with apiKey.
func (f *kbFlags) open(baseURL, apiKey string) (*knowledge.Base, error) {
	var opts []knowledge.Option
	if !f.creates {
		if _, err := os.Stat(f.file); err != nil {
			return nil, fmt.Errorf("-kb %s: %w: make it with robby index -kb %s DIR", f.file, errors.Unwrap(err), f.file)
		}
	}
	if f.embedModel != "" && f.embedModel != "none" {
		url := f.embedURL
		if url == "" {
			url = baseURL
		}
		opts = append(opts, knowledge.WithEmbedder(knowledge.NewOpenAIEmbedder(f.embedModel,
			option.WithBaseURL(url), option.WithAPIKey(apiKey))))
	}
	return knowledge.Open(f.file, opts...)
}
