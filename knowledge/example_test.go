package knowledge_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/openai/openai-go/v3/option"
	"github.com/robby-go/robby/knowledge"
	"github.com/robby-go/robby/robbytest"
)

func ExampleBase_Search() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "kb")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// An embedding endpoint: here robbytest's deterministic one.
	srv := robbytest.NewServer()
	defer srv.Close()
	kb, err := knowledge.Open(filepath.Join(dir, "kb.db"), knowledge.WithEmbedder(
		knowledge.NewOpenAIEmbedder("test-embed", option.WithBaseURL(srv.URL), option.WithAPIKey("none"))))
	if err != nil {
		log.Fatal(err)
	}
	defer kb.Close()

	_, err = kb.Add(ctx,
		knowledge.Document{ID: "pets.md", Format: knowledge.Markdown,
			Text: "# Pets\n\n## Cats\n\nCats sleep sixteen hours a day.\n\n## Dogs\n\nDogs need a walk every day.\n"},
		knowledge.Document{ID: "plants.txt", Text: "Cacti need water once a month."},
	)
	if err != nil {
		log.Fatal(err)
	}
	hits, err := kb.Search(ctx, "how long do cats sleep?", knowledge.SearchOptions{Limit: 1})
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range hits {
		fmt.Printf("[%s] %s: %s\n", h.Citation(), h.Heading, h.Text)
	}
	// Output:
	// [pets.md:3-5] Pets > Cats: ## Cats
	//
	// Cats sleep sixteen hours a day.
}
