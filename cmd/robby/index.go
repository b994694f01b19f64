package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
)

var indexCommand = commandSpec{
	name: "index", synopsis: "robby index -kb FILE [flags] DIR...", takesArgs: true,
	summary: "index folders of documents into a knowledge base, which -kb gives the agent",
	about: "Indexes the Markdown, HTML and text files under each DIR (or the files named) into FILE.\n" +
		"Run it again to bring FILE up to date: changed files are re-indexed, deleted ones removed.\n" +
		"A file that cannot be indexed is skipped and named; the others are indexed, and the exit status is 1.",
	env: slices.Concat(endpointEnv, embeddingsEnv), setup: setupIndex,
}

func setupIndex(c *command) func(context.Context) error {
	f := kbFlags{creates: true}
	f.register(c.fs)
	baseURL := c.fs.String("base-url", defaultBaseURL, "endpoint of the embedding model, if -embed-url is not set (env OPENAI_BASE_URL)")
	apiKey := c.fs.String("api-key", "", "API key of the embeddings endpoint (env OPENAI_API_KEY)")
	return func(ctx context.Context) error {
		if f.file == "" || len(c.args) == 0 {
			c.usage(c.stderr)
			return usageError{errors.New("index needs -kb FILE and at least one DIR")}
		}
		return index(ctx, &f, *baseURL, *apiKey, c.args, c.stdout)
	}
}

// index indexes dirs into the knowledge base of f. A base it made is
// removed again when nothing could be indexed into it.
func index(ctx context.Context, f *kbFlags, baseURL, apiKey string, dirs []string, stdout io.Writer) (err error) {
	for _, dir := range dirs {
		if _, err := os.Stat(dir); err != nil {
			return fmt.Errorf("%s: %w: name folders or files of documents", dir, errors.Unwrap(err))
		}
	}
	_, statErr := os.Stat(f.file)
	made := errors.Is(statErr, fs.ErrNotExist)
	kb, err := f.open(baseURL, apiKey)
	if err != nil {
		return err
	}
	indexed := 0
	defer func() {
		kb.Close()
		if made && indexed == 0 && err != nil {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				os.Remove(f.file + suffix)
			}
		}
	}()
	var errs []error
	for _, dir := range dirs {
		rep, err := kb.AddDir(ctx, dir)
		skipped := ""
		if rep.Skipped > 0 {
			skipped = fmt.Sprintf("; %d skipped", rep.Skipped) // each named in err
		}
		fmt.Fprintf(stdout, "%s: %d added, %d updated, %d unchanged, %d deleted; %d chunks written, %d embedded%s\n",
			dir, rep.Added, rep.Updated, rep.Unchanged, rep.Deleted, rep.Chunks, rep.Embedded, skipped)
		indexed += rep.Added + rep.Updated
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
