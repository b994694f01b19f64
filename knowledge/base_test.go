package knowledge_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/robby-go/robby/knowledge"
	"github.com/robby-go/robby/robbytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sync/errgroup"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// docs writes a small folder of Markdown, HTML and text files, with a
// hidden folder and a file of another kind that are not indexed.
func docs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"install.md": "# Install\n\nRun `go get github.com/robby-go/robby` to add the library to a module.\n\n" +
			"## Requirements\n\nRobby needs Go 1.26 or later. It is pure Go: no cgo.\n",
		"tools/tools.md": "# Tools\n\nA tool is a Go function the model calls. NewTool infers the JSON Schema of its arguments.\n\n" +
			"## Timeouts\n\nEach tool call is bounded by the tool timeout, two minutes by default.\n",
		"faq.html": "<html><head><title>FAQ</title></head><body><h1>FAQ</h1><h2>Which endpoints work?</h2>" +
			"<p>Any OpenAI-compatible endpoint: Ollama, llama.cpp, Docker Model Runner, vLLM and OpenAI.</p></body></html>",
		"notes.txt":         "Release notes.\n\nThe knowledge base keeps its index in one SQLite file.\n",
		"image.png":         "not text",
		".hidden/secret.md": "# Secret\n\npassword hunter2\n",
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	return dir
}

func embedder(t *testing.T) (*knowledge.OpenAIEmbedder, *robbytest.Server) {
	srv := robbytest.NewServer()
	t.Cleanup(srv.Close)
	return knowledge.NewOpenAIEmbedder("test-embed", option.WithBaseURL(srv.URL), option.WithAPIKey("k")), srv
}

func open(t *testing.T, opts ...knowledge.Option) *knowledge.Base {
	t.Helper()
	b, err := knowledge.Open(filepath.Join(t.TempDir(), "kb.db"), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return b
}

func sources(hits []knowledge.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Source)
	}
	return out
}

func TestKeywordSearchWithoutEmbedder(t *testing.T) {
	ctx := context.Background()
	dir := docs(t)
	b := open(t)
	rep, err := b.AddDir(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, 4, rep.Added, "md, html and txt files; not the png or the hidden folder")
	assert.Zero(t, rep.Embedded)

	hits, err := b.Search(ctx, "tool call timeout", knowledge.SearchOptions{Limit: 2})
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	top := hits[0]
	assert.Equal(t, filepath.ToSlash(filepath.Join(dir, "tools/tools.md")), top.Source)
	assert.Equal(t, "Tools > Timeouts", top.Heading)
	assert.Equal(t, 5, top.StartLine)
	assert.Equal(t, 7, top.EndLine)
	assert.Equal(t, "Tools", top.Title)
	assert.Equal(t, top.Source+":5-7", top.Citation())
	assert.Contains(t, top.Text, "two minutes by default")

	hits, err = b.Search(ctx, "Ollama", knowledge.SearchOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	assert.Equal(t, "FAQ > Which endpoints work?", hits[0].Heading, "HTML headings are kept")

	hits, err = b.Search(ctx, "hunter2 password", knowledge.SearchOptions{})
	require.NoError(t, err)
	assert.Empty(t, hits, "hidden folders are not indexed")

	_, err = b.Search(ctx, "tool", knowledge.SearchOptions{Mode: knowledge.Vector})
	assert.ErrorIs(t, err, knowledge.ErrNoEmbedder)
}

func TestQueryWithOperatorsIsText(t *testing.T) {
	ctx := context.Background()
	b := open(t)
	_, err := b.Add(ctx, knowledge.Document{ID: "a", Text: "NEAR the AND gate, OR not; column:value \"quoted\""})
	require.NoError(t, err)
	for _, q := range []string{`AND OR NOT`, `"unbalanced`, `column:value`, `a* (b`, `NEAR(x y)`, ``, `!!!`} {
		_, err := b.Search(ctx, q, knowledge.SearchOptions{})
		assert.NoError(t, err, q)
	}
	hits, err := b.Search(ctx, `gate AND "quoted`, knowledge.SearchOptions{})
	require.NoError(t, err)
	assert.Len(t, hits, 1)
}

func TestIncrementalReindexAndEmbeddingCache(t *testing.T) {
	ctx := context.Background()
	dir := docs(t)
	e, srv := embedder(t)
	b := open(t, knowledge.WithEmbedder(e))
	rep, err := b.AddDir(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, 4, rep.Added)
	assert.Equal(t, rep.Chunks, rep.Embedded, "every chunk embedded once")
	calls := len(srv.Embeddings())
	assert.Equal(t, 1, calls, "one batch")

	// Again, unchanged: nothing is re-chunked or embedded.
	rep, err = b.AddDir(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, knowledge.Report{Unchanged: 4}, rep)
	assert.Len(t, srv.Embeddings(), calls)

	// One section changes, a file goes, another appears.
	tools := filepath.Join(dir, "tools/tools.md")
	require.NoError(t, os.WriteFile(tools, []byte("# Tools\n\nA tool is a Go function the model calls. NewTool infers the JSON Schema of its arguments.\n\n"+
		"## Timeouts\n\nEach tool call is bounded by the tool timeout, set with WithToolTimeout.\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "notes.txt")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "copy.md"), []byte("# Install\n\nRun `go get github.com/robby-go/robby` to add the library to a module.\n\n"+
		"## Requirements\n\nRobby needs Go 1.26 or later. It is pure Go: no cgo.\n"), 0o644))
	rep, err = b.AddDir(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Added)
	assert.Equal(t, 1, rep.Updated)
	assert.Equal(t, 1, rep.Deleted)
	assert.Equal(t, 2, rep.Unchanged)
	assert.Equal(t, 1, rep.Embedded, "only the changed section is embedded; the copy's vectors are cached")
	all := srv.Embeddings()
	assert.Len(t, all[len(all)-1], 1)

	hits, err := b.Search(ctx, "how is a tool call's time limit set?", knowledge.SearchOptions{Limit: 3})
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	assert.Equal(t, filepath.ToSlash(tools), hits[0].Source)
	assert.Contains(t, hits[0].Text, "WithToolTimeout")

	hits, err = b.Search(ctx, "release notes SQLite", knowledge.SearchOptions{})
	require.NoError(t, err)
	for _, h := range hits {
		assert.NotContains(t, h.Source, "notes.txt", "a deleted file's chunks are gone")
	}

	// The copy of install.md is returned once.
	hits, err = b.Search(ctx, "requirements cgo", knowledge.SearchOptions{Limit: 5})
	require.NoError(t, err)
	texts := map[string]int{}
	for _, h := range hits {
		texts[h.Text]++
	}
	for text, n := range texts {
		assert.Equal(t, 1, n, "returned once: %q", text)
	}
}

func TestSearchModesAndFilters(t *testing.T) {
	ctx := context.Background()
	e, _ := embedder(t)
	b := open(t, knowledge.WithEmbedder(e))
	_, err := b.Add(ctx,
		knowledge.Document{ID: "en/tools", Text: "Tools are functions the model calls.", Metadata: map[string]string{"lang": "en"}},
		knowledge.Document{ID: "fr/outils", Text: "Les outils sont des fonctions (tools) que le modèle appelle.", Metadata: map[string]string{"lang": "fr"}},
		knowledge.Document{ID: "en/memory", Text: "The conversation is kept between runs.", Metadata: map[string]string{"lang": "en"}},
	)
	require.NoError(t, err)
	for _, mode := range []knowledge.Mode{knowledge.Keyword, knowledge.Vector, knowledge.Hybrid} {
		t.Run(string(mode), func(t *testing.T) {
			hits, err := b.Search(ctx, "tools functions", knowledge.SearchOptions{Mode: mode, Limit: 1})
			require.NoError(t, err)
			require.Len(t, hits, 1)
			assert.Equal(t, "en/tools", hits[0].Source)
			assert.Equal(t, map[string]string{"lang": "en"}, hits[0].Metadata)

			hits, err = b.Search(ctx, "tools functions", knowledge.SearchOptions{Mode: mode, Filter: map[string]string{"lang": "fr"}})
			require.NoError(t, err)
			assert.Equal(t, []string{"fr/outils"}, sources(hits))
		})
	}
	_, err = b.Search(ctx, "x", knowledge.SearchOptions{Mode: "semantic"})
	assert.ErrorContains(t, err, "unknown search mode")
}

func TestDeleteByID(t *testing.T) {
	ctx := context.Background()
	e, _ := embedder(t)
	b := open(t, knowledge.WithEmbedder(e))
	_, err := b.Add(ctx, knowledge.Document{ID: "a", Text: "alpha apples"}, knowledge.Document{ID: "b", Text: "beta apples"})
	require.NoError(t, err)
	hits, err := b.Search(ctx, "apples", knowledge.SearchOptions{})
	require.NoError(t, err)
	assert.Len(t, hits, 2)

	n, err := b.Delete(ctx, "a", "missing")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	for _, mode := range []knowledge.Mode{knowledge.Keyword, knowledge.Vector} {
		hits, err = b.Search(ctx, "alpha apples", knowledge.SearchOptions{Mode: mode})
		require.NoError(t, err)
		assert.Equal(t, []string{"b"}, sources(hits), mode)
	}
	docs, err := b.Documents(ctx)
	require.NoError(t, err)
	require.Len(t, docs, 1)
	assert.Equal(t, "b", docs[0].ID)
	assert.Equal(t, 1, docs[0].Chunks)
}

// A second Base on the same file sees the first one's writes, vectors
// included.
func TestTwoBasesOnOneFile(t *testing.T) {
	ctx := context.Background()
	e, _ := embedder(t)
	path := filepath.Join(t.TempDir(), "kb.db")
	w, err := knowledge.Open(path, knowledge.WithEmbedder(e))
	require.NoError(t, err)
	defer w.Close()
	r, err := knowledge.Open(path, knowledge.WithEmbedder(e))
	require.NoError(t, err)
	defer r.Close()
	_, err = w.Add(ctx, knowledge.Document{ID: "a", Text: "first fact"})
	require.NoError(t, err)
	hits, err := r.Search(ctx, "fact", knowledge.SearchOptions{Mode: knowledge.Vector})
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, sources(hits))
	_, err = w.Add(ctx, knowledge.Document{ID: "b", Text: "second fact"})
	require.NoError(t, err)
	hits, err = r.Search(ctx, "second fact", knowledge.SearchOptions{Mode: knowledge.Vector})
	require.NoError(t, err)
	assert.Equal(t, []string{"b", "a"}, sources(hits))
}

// Embedding requests go through openai-go, which retries a 503.
func TestEmbedderRetries(t *testing.T) {
	ctx := context.Background()
	srv := robbytest.NewServer()
	defer srv.Close()
	target, _ := url.Parse(srv.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var failed atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failed.Add(1) == 1 {
			w.Header().Set("Retry-After-Ms", "1")
			http.Error(w, `{"error":{"message":"loading model"}}`, http.StatusServiceUnavailable)
			return
		}
		r.URL.Path = target.Path + r.URL.Path
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	e := knowledge.NewOpenAIEmbedder("m", option.WithBaseURL(front.URL), option.WithAPIKey("k"))
	vecs, err := e.Embed(ctx, []string{"one", "two"})
	require.NoError(t, err)
	require.Len(t, vecs, 2)
	assert.Equal(t, robbytest.Embedding("two", robbytest.EmbeddingDims), vecs[1])
	assert.Equal(t, int32(2), failed.Load())
}

func TestEmbedderBatches(t *testing.T) {
	e, srv := embedder(t)
	texts := make([]string, 150)
	for i := range texts {
		texts[i] = "text number " + string(rune('a'+i%26))
	}
	vecs, err := e.Embed(context.Background(), texts)
	require.NoError(t, err)
	assert.Len(t, vecs, 150)
	var sizes []int
	for _, in := range srv.Embeddings() {
		sizes = append(sizes, len(in))
	}
	assert.Equal(t, []int{64, 64, 22}, sizes)
}

// With ROBBY_EMBEDDINGS_URL (and ROBBY_EMBEDDINGS_MODEL, OPENAI_API_KEY if
// needed), the folder is indexed and searched with a real model.
func TestRealEmbeddingEndpoint(t *testing.T) {
	base := os.Getenv("ROBBY_EMBEDDINGS_URL")
	if base == "" {
		t.Skip("ROBBY_EMBEDDINGS_URL is not set")
	}
	model := os.Getenv("ROBBY_EMBEDDINGS_MODEL")
	if model == "" {
		model = "ai/mxbai-embed-large"
	}
	ctx := context.Background()
	dir := docs(t)
	b := open(t, knowledge.WithEmbedder(knowledge.NewOpenAIEmbedder(model, option.WithBaseURL(base))))
	rep, err := b.AddDir(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, rep.Chunks, rep.Embedded)
	hits, err := b.Search(ctx, "which servers can I point robby at?", knowledge.SearchOptions{Mode: knowledge.Vector, Limit: 1})
	require.NoError(t, err)
	require.Len(t, hits, 1)
	assert.Contains(t, hits[0].Text, "Ollama")
}

// Searches run while documents are added and deleted, on one Base.
func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	e, _ := embedder(t)
	b := open(t, knowledge.WithEmbedder(e))
	_, err := b.Add(ctx, knowledge.Document{ID: "seed", Text: "a first fact about apples"})
	require.NoError(t, err)
	var g errgroup.Group
	for w := range 4 {
		g.Go(func() error {
			for i := range 10 {
				id := fmt.Sprintf("w%d-%d", w, i)
				if _, err := b.Add(ctx, knowledge.Document{ID: id, Text: "fact number " + id + " about apples"}); err != nil {
					return err
				}
				if i%3 == 0 {
					if _, err := b.Delete(ctx, id); err != nil {
						return err
					}
				}
			}
			return nil
		})
		g.Go(func() error {
			for range 20 {
				hits, err := b.Search(ctx, "apples fact", knowledge.SearchOptions{})
				if err != nil {
					return err
				}
				if len(hits) == 0 {
					return fmt.Errorf("no hit")
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	docs, err := b.Documents(ctx)
	require.NoError(t, err)
	assert.Len(t, docs, 1+4*6)
}

// A path is a path: "notes#1.db" and "notes#2.db" are two bases, neither of
// them "notes" (the driver read '#' as a URI's fragment, '?' as its query).
func TestPathIsNotAURI(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, names := range [][2]string{{"what?.db", "what?x.db"}, {"notes#1.db", "notes#2.db"}} {
		for i, name := range names {
			b, err := knowledge.Open(filepath.Join(dir, name))
			require.NoError(t, err)
			rep, err := b.Add(ctx, knowledge.Document{ID: "d", Text: fmt.Sprint("document ", i)})
			require.NoError(t, err)
			assert.Equal(t, 1, rep.Added, "%s is a base of its own", name)
			require.NoError(t, b.Close())
			_, err = os.Stat(filepath.Join(dir, name))
			assert.NoError(t, err, "%s is written to itself", name)
		}
	}
	for _, stray := range []string{"what", "notes"} {
		_, err := os.Stat(filepath.Join(dir, stray))
		assert.ErrorIs(t, err, os.ErrNotExist, "nothing is written to %s", stray)
	}
}

// One bad file is that file's failure: HTML nested deeper than the parser
// allows is skipped and named, and the rest of the folder, in its batch
// and after it, is indexed (it aborted the walk: nothing was indexed).
func TestAddDirSkipsABadDocument(t *testing.T) {
	ctx := context.Background()
	dir := docs(t)
	deep := filepath.Join(dir, "deep.html")
	require.NoError(t, os.WriteFile(deep, []byte(strings.Repeat("<div>", 600)+"deep"), 0o644))
	unclosed := filepath.Join(dir, "tools/unclosed.html")
	require.NoError(t, os.WriteFile(unclosed, []byte(strings.Repeat("<b><i>", 1000)+"unclosed"), 0o644))
	for i := range 70 { // past one batch, after the bad files
		name := filepath.Join(dir, "zz", fmt.Sprintf("n%02d.md", i))
		require.NoError(t, os.MkdirAll(filepath.Dir(name), 0o755))
		require.NoError(t, os.WriteFile(name, []byte(fmt.Sprintf("# Note %d\n\nnote number %d\n", i, i)), 0o644))
	}
	b := open(t)
	rep, err := b.AddDir(ctx, dir)
	require.Error(t, err)
	var derr *knowledge.DocumentError
	require.ErrorAs(t, err, &derr)
	assert.ErrorContains(t, err, filepath.ToSlash(deep))
	assert.ErrorContains(t, err, filepath.ToSlash(unclosed))
	assert.Equal(t, 2, rep.Skipped)
	assert.Equal(t, 4+70, rep.Added, "every other document is indexed")
	hits, err := b.Search(ctx, "note number 69", knowledge.SearchOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, hits)

	// Add skips it too, and indexes the others.
	rep, err = b.Add(ctx, knowledge.Document{ID: "bad", Format: knowledge.HTML, Text: strings.Repeat("<section>", 600)},
		knowledge.Document{ID: "good", Text: "a good document"}, knowledge.Document{Text: "no id"})
	require.ErrorAs(t, err, &derr)
	assert.Equal(t, knowledge.Report{Added: 1, Skipped: 2, Chunks: 1}, rep)
}

// A folder given as a symbolic link is followed (it indexed nothing,
// silently); the IDs are paths under the link, as given.
func TestAddDirFollowsALinkedRoot(t *testing.T) {
	ctx := context.Background()
	dir := docs(t)
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(dir, link))
	b := open(t)
	rep, err := b.AddDir(ctx, link)
	require.NoError(t, err)
	assert.Equal(t, 4, rep.Added)
	hits, err := b.Search(ctx, "tool call timeout", knowledge.SearchOptions{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	assert.Equal(t, filepath.ToSlash(filepath.Join(link, "tools/tools.md")), hits[0].Source)

	rep, err = b.AddDir(ctx, link)
	require.NoError(t, err)
	assert.Equal(t, knowledge.Report{Unchanged: 4}, rep, "nothing pruned, nothing added again")
}
