package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

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
}

func (f *kbFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.file, "kb", "", "knowledge base file (SQLite) the agent searches with the search_knowledge tool")
	fs.StringVar(&f.embedModel, "embed-model", envOr("ROBBY_EMBEDDINGS_MODEL", ""),
		"embedding model for vector search; none means keyword search only (env ROBBY_EMBEDDINGS_MODEL)")
	fs.StringVar(&f.embedURL, "embed-url", envOr("ROBBY_EMBEDDINGS_URL", ""),
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
	if f.embedModel != "" {
		url := f.embedURL
		if url == "" {
			url = baseURL
		}
		opts = append(opts, knowledge.WithEmbedder(knowledge.NewOpenAIEmbedder(f.embedModel,
			option.WithBaseURL(url), option.WithAPIKey(apiKey))))
	}
	return knowledge.Open(f.file, opts...)
}

func indexCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := newCommand("index", "robby index -kb FILE [flags] DIR...",
		"Indexes the Markdown, HTML and text files under each DIR (or the files named) into FILE.\n"+
			"Run it again to bring FILE up to date: changed files are re-indexed, deleted ones removed.\n"+
			"A file that cannot be indexed is skipped and named; the others are indexed, and the exit status is 1.",
		endpointEnv, embeddingsEnv)
	fs := cmd.fs
	var f kbFlags
	f.register(fs)
	baseURL := fs.String("base-url", envOr("OPENAI_BASE_URL", defaultBaseURL), "endpoint of the embedding model, if -embed-url is not set (env OPENAI_BASE_URL)")
	apiKey := fs.String("api-key", envOr("OPENAI_API_KEY", ""), "API key of the embeddings endpoint (env OPENAI_API_KEY)")
	if err := cmd.parse(args, stdout, stderr); err != nil {
		return err
	}
	if f.file == "" || fs.NArg() == 0 {
		cmd.usage(stderr)
		return usageError{errors.New("index needs -kb FILE and at least one DIR")}
	}
	kb, err := f.open(*baseURL, *apiKey)
	if err != nil {
		return err
	}
	defer kb.Close()
	var errs []error
	for _, dir := range fs.Args() {
		rep, err := kb.AddDir(ctx, dir)
		skipped := ""
		if rep.Skipped > 0 {
			skipped = fmt.Sprintf("; %d skipped", rep.Skipped) // each named in err
		}
		fmt.Fprintf(stdout, "%s: %d added, %d updated, %d unchanged, %d deleted; %d chunks written, %d embedded%s\n",
			dir, rep.Added, rep.Updated, rep.Unchanged, rep.Deleted, rep.Chunks, rep.Embedded, skipped)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
