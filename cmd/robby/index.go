package main

import (
	"context"
	"errors"
	"fmt"
	"io"
)

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
