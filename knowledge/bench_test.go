package knowledge

import (
	"bufio"
	"context"
	"fmt"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robby-go/robby/robbytest"
)

// localEmbedder is robbytest's deterministic embedding computed in
// process: the figures measure robby's indexing and search, not HTTP.
type localEmbedder struct{}

func (localEmbedder) Model() string { return "robbytest-hashed-256" }

func (localEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = robbytest.Embedding(t, robbytest.EmbeddingDims)
	}
	return out, nil
}

// stdlibDocs returns the package documentation of the Go standard library
// found in GOROOT, one Markdown document per package, by import path.
func stdlibDocs(tb testing.TB) []Document {
	tb.Helper()
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		tb.Fatalf("go env GOROOT: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(goroot)), "src")
	var docs []Document
	err = filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(src, path)
		rel = filepath.ToSlash(rel)
		switch base := d.Name(); {
		case rel == ".":
			return nil
		case base == "testdata" || base == "internal" || base == "vendor" || rel == "cmd" || strings.HasPrefix(base, "."):
			return filepath.SkipDir
		}
		if text := packageDoc(path); text != "" {
			docs = append(docs, Document{ID: rel, Format: Markdown, Text: "# Package " + rel + "\n\n" + text})
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	if len(docs) < 100 {
		tb.Fatalf("only %d package docs under %s", len(docs), src)
	}
	return docs
}

// packageDoc returns the longest package comment of the Go files in dir.
func packageDoc(dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	best := ""
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err == nil && file.Doc != nil && len(file.Doc.Text()) > len(best) {
			best = file.Doc.Text()
		}
	}
	return best
}

type question struct{ text, answer string }

func stdlibQuestions(tb testing.TB) []question {
	f, err := os.Open("testdata/stdlib-questions.tsv")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var qs []question
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		text, answer, ok := strings.Cut(line, "\t")
		if !ok {
			tb.Fatalf("bad line %q", line)
		}
		qs = append(qs, question{text, answer})
	}
	return qs
}

// TestRetrievalQuality indexes the standard library's package docs and
// asks questions whose answer is one package: recall@5 (the package is
// among the first five distinct packages found) and MRR (the mean of
// 1/rank, 0 past 20) for each mode. The figures are in docs/BENCHMARKS.md;
// the floors below catch a regression.
func TestRetrievalQuality(t *testing.T) {
	ctx := context.Background()
	docs := stdlibDocs(t)
	b, err := Open(filepath.Join(t.TempDir(), "kb.db"), WithEmbedder(localEmbedder{}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rep, err := b.Add(ctx, docs...)
	if err != nil {
		t.Fatal(err)
	}
	qs := stdlibQuestions(t)
	for _, q := range qs {
		if !slices.ContainsFunc(docs, func(d Document) bool { return d.ID == q.answer }) {
			t.Fatalf("question %q: no package %s in the corpus", q.text, q.answer)
		}
	}
	t.Logf("corpus: %d packages, %d chunks; %d questions", len(docs), rep.Chunks, len(qs))
	floors := map[Mode][2]float64{Keyword: {0.8, 0.7}, Vector: {0.5, 0.45}, Hybrid: {0.8, 0.6}}
	for _, mode := range []Mode{Keyword, Vector, Hybrid} {
		var found5, rr float64
		for _, q := range qs {
			hits, err := b.Search(ctx, q.text, SearchOptions{Mode: mode, Limit: 40})
			if err != nil {
				t.Fatal(err)
			}
			rank := packageRank(hits, q.answer)
			if rank > 0 && rank <= 5 {
				found5++
			}
			if rank > 0 && rank <= 20 {
				rr += 1 / float64(rank)
			}
		}
		recall, mrr := found5/float64(len(qs)), rr/float64(len(qs))
		t.Logf("%-8s recall@5 %.2f  MRR %.2f", mode, recall, mrr)
		if f := floors[mode]; recall < f[0] || mrr < f[1] {
			t.Errorf("%s: recall@5 %.2f, MRR %.2f: below the floors %.2f, %.2f", mode, recall, mrr, f[0], f[1])
		}
	}
}

// packageRank returns the rank, from 1, of pkg among the distinct packages
// of hits, or 0.
func packageRank(hits []Hit, pkg string) int {
	var seen []string
	for _, h := range hits {
		if !slices.Contains(seen, h.Source) {
			seen = append(seen, h.Source)
			if h.Source == pkg {
				return len(seen)
			}
		}
	}
	return 0
}

// synthetic returns documents of about ten chunks each, made of
// paragraphs of the standard library's docs drawn at random (seeded), with
// a heading every three paragraphs, until they hold n chunks.
func synthetic(tb testing.TB, n int) []Document {
	var paras []string
	for _, d := range stdlibDocs(tb) {
		for p := range strings.SplitSeq(d.Text, "\n\n") {
			if len(p) > 200 && !strings.HasPrefix(p, "#") {
				paras = append(paras, p)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	sp := splitter{size: DefaultChunkSize, overlap: DefaultChunkOverlap}
	var docs []Document
	for chunks := 0; chunks < n; {
		var b strings.Builder
		for i := range 24 {
			if i%3 == 0 {
				fmt.Fprintf(&b, "## Section %d\n\n", i/3)
			}
			b.WriteString(paras[rng.IntN(len(paras))] + "\n\n")
		}
		text := b.String()
		chunks += len(sp.split(text, true))
		docs = append(docs, Document{ID: fmt.Sprintf("doc-%06d.md", len(docs)), Format: Markdown, Text: text})
	}
	return docs
}

// BenchmarkAdd indexes documents with no embedder: chunking, the SQLite
// rows and the full-text index.
func BenchmarkAdd(b *testing.B) {
	docs := synthetic(b, 5000)
	ctx := context.Background()
	chunks := 0
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		kb, err := Open(filepath.Join(b.TempDir(), "kb.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		for batch := range slices.Chunk(docs, 64) {
			rep, err := kb.Add(ctx, batch...)
			if err != nil {
				b.Fatal(err)
			}
			chunks += rep.Chunks
		}
		elapsed += time.Since(start)
		b.StopTimer()
		kb.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(chunks)/elapsed.Seconds(), "chunks/s")
}

// BenchmarkSearch times queries (the standard library questions, in turn)
// at 10,000 and 100,000 chunks, with the percentiles of single queries.
// The vector index is loaded before the clock starts; the memory it takes
// and the file's size are reported per chunk.
func BenchmarkSearch(b *testing.B) {
	qs := stdlibQuestions(b)
	ctx := context.Background()
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "kb.db")
			kb, err := Open(path, WithEmbedder(localEmbedder{}))
			if err != nil {
				b.Fatal(err)
			}
			defer kb.Close()
			for batch := range slices.Chunk(synthetic(b, n), 256) {
				if _, err := kb.Add(ctx, batch...); err != nil {
					b.Fatal(err)
				}
			}
			fileBytes := int64(0)
			for _, suffix := range []string{"", "-wal"} {
				if fi, err := os.Stat(path + suffix); err == nil {
					fileBytes += fi.Size()
				}
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			ix, err := kb.vecs.get(ctx, kb.db, localEmbedder{}.Model())
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			vectorBytes := float64(after.HeapAlloc-before.HeapAlloc) / float64(len(ix.ids))
			timed := func(b *testing.B, search func(q string) error) {
				var times []time.Duration
				i := 0
				for b.Loop() {
					start := time.Now()
					if err := search(qs[i%len(qs)].text); err != nil {
						b.Fatal(err)
					}
					times = append(times, time.Since(start))
					i++
				}
				slices.Sort(times)
				b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
				b.ReportMetric(vectorBytes, "vector-B/chunk")
				b.ReportMetric(float64(fileBytes)/float64(len(ix.ids)), "file-B/chunk")
			}
			for _, mode := range []Mode{Keyword, Vector, Hybrid} {
				b.Run(string(mode), func(b *testing.B) {
					timed(b, func(q string) error {
						_, err := kb.Search(ctx, q, SearchOptions{Mode: mode})
						return err
					})
				})
			}
			// The baseline of keyword: the same FTS5 query written by hand,
			// reading the text of the first five chunks.
			b.Run("raw-fts5", func(b *testing.B) {
				timed(b, func(q string) error {
					rows, err := kb.db.QueryContext(ctx, `SELECT c.doc_id, c.text FROM kb_fts JOIN kb_chunks c ON c.id = kb_fts.rowid
						WHERE kb_fts MATCH ? ORDER BY rank LIMIT 5`, ftsQuery(q))
					if err != nil {
						return err
					}
					defer rows.Close()
					for rows.Next() {
						var id, text string
						if err := rows.Scan(&id, &text); err != nil {
							return err
						}
					}
					return rows.Err()
				})
			})
		})
	}
}

// BenchmarkVectorScan pairs the index's top-k scan with a plain loop doing
// the least work by hand: one dot product per row, keeping only the best
// score, over 100,000 vectors of 256 dimensions.
func BenchmarkVectorScan(b *testing.B) {
	const n, dim, k = 100_000, 256, 50
	rng := rand.New(rand.NewPCG(3, 4))
	ix := &vectorIndex{dim: dim, ids: make([]int64, n), vecs: make([]float32, n*dim)}
	for i := range ix.ids {
		ix.ids[i] = int64(i)
	}
	for i := range ix.vecs {
		ix.vecs[i] = rng.Float32() - 0.5
	}
	q := make([]float32, dim)
	for i := range q {
		q[i] = rng.Float32() - 0.5
	}
	b.Run("index", func(b *testing.B) {
		for b.Loop() {
			ix.search(q, k, nil)
		}
	})
	b.Run("plain-loop", func(b *testing.B) {
		for b.Loop() {
			best, bestID := float32(-2), -1
			for i := range n {
				var s float32
				row := ix.vecs[i*dim : (i+1)*dim]
				for j := range row {
					s += row[j] * q[j]
				}
				if s > best {
					best, bestID = s, i
				}
			}
			_ = bestID
		}
	})
}
