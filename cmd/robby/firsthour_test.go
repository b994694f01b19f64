package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// TestFlagsAfterThePrompt: flags after the prompt are honoured, not sent
// as text; after -- they are the prompt's.
func TestFlagsAfterThePrompt(t *testing.T) {
	srv := upstream(t, robbytest.Text("a"), robbytest.Text("b"))
	require.NoError(t, run(t.Context(), []string{"run", "hi", "-model", "fake", "-base-url", srv.URL}, nil, io.Discard, io.Discard))
	require.NoError(t, run(t.Context(), []string{"run", "-base-url", srv.URL, "--", "-5", "degrees"}, nil, io.Discard, io.Discard))
	reqs := srv.Requests()
	assert.Equal(t, "fake", reqs[0].Model)
	assert.Equal(t, "hi", reqs[0].Messages[len(reqs[0].Messages)-1].Content)
	assert.Equal(t, "-5 degrees", reqs[1].Messages[len(reqs[1].Messages)-1].Content)
}

// TestPathsThatMustExist: a mistyped -kb or -store is an error that says
// what to do, and leaves nothing behind; -embed-model none asks for no
// embeddings.
func TestPathsThatMustExist(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	dir := t.TempDir()
	srv := upstream(t)
	var stderr bytes.Buffer
	err := run(t.Context(), []string{"run", "-base-url", srv.URL, "-kb", filepath.Join(dir, "typo.db"), "hi"}, nil, io.Discard, &stderr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "make it with robby index -kb")
	err = run(t.Context(), []string{"chat", "-base-url", srv.URL, "-session", "s", "-store", filepath.Join(dir, "nope", "s.db")}, strings.NewReader(""), io.Discard, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mkdir -p")
	err = run(t.Context(), []string{"index", "-kb", filepath.Join(dir, "kb.db"), filepath.Join(dir, "no-docs")}, nil, io.Discard, io.Discard)
	require.Error(t, err)
	entries, _ := os.ReadDir(dir)
	assert.Empty(t, entries, "bad input leaves nothing behind")

	docs := filepath.Join(dir, "docs")
	require.NoError(t, os.Mkdir(docs, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(docs, "a.md"), []byte("# A\n\nText.\n"), 0o644))
	require.NoError(t, run(t.Context(), []string{"index", "-kb", filepath.Join(dir, "kb.db"), "-embed-model", "none", "-base-url", srv.URL, docs}, nil, io.Discard, io.Discard))
	assert.Empty(t, srv.Requests(), "-embed-model none asks for no embeddings")
}

// TestErrorsSayWhatToDo: the hints fit what was given.
func TestErrorsSayWhatToDo(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	srv := upstream(t, robbytest.Error(404, "not found"))
	base := strings.TrimSuffix(srv.URL, "/v1")
	err := run(t.Context(), []string{"run", "-base-url", base, "hi"}, nil, io.Discard, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "try -base-url "+base+"/v1")

	err = run(t.Context(), []string{"run", "-base-url", "http://127.0.0.1:1/v1", "hi"}, nil, io.Discard, io.Discard)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "Docker Model Runner", "another endpoint was named")
	assert.Contains(t, err.Error(), "correct -base-url")

	var stderr bytes.Buffer
	err = run(t.Context(), []string{"serve", "-addr", "nonsense"}, nil, io.Discard, &stderr)
	assert.Equal(t, 2, exitCode(err, &stderr))
	assert.Contains(t, stderr.String(), `bad -addr "nonsense"`)
	assert.NotContains(t, stderr.String(), "token")
}
