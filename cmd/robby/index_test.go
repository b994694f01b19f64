package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

// TestIndexThenRunCitesTheFile indexes a folder with embeddings from the
// fake endpoint, then answers a question through search_knowledge.
func TestIndexThenRunCitesTheFile(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	require.NoError(t, os.MkdirAll(docs, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(docs, "deploy.md"),
		[]byte("# Deploy\n\nShip the binary with scp.\n\n## Rollback\n\nKeep the previous binary; to roll back, restart it.\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(docs, "team.md"), []byte("# Team\n\nAda owns the build.\n"), 0o644))
	kb := filepath.Join(dir, "kb.db")

	srv := upstream(t)
	var stdout, stderr bytes.Buffer
	args := []string{"index", "-kb", kb, "-embed-model", "embed", "-base-url", srv.URL, docs}
	require.NoError(t, run(t.Context(), args, nil, &stdout, &stderr), stderr.String())
	assert.Equal(t, docs+": 2 added, 0 updated, 0 unchanged, 0 deleted; 3 chunks written, 3 embedded\n", stdout.String())

	stdout.Reset()
	require.NoError(t, run(t.Context(), args, nil, &stdout, &stderr), stderr.String())
	assert.Equal(t, docs+": 0 added, 0 updated, 2 unchanged, 0 deleted; 0 chunks written, 0 embedded\n", stdout.String())

	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("search_knowledge", `{"query":"how do I roll back?"}`)),
		robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			var res struct {
				Passages []struct{ Cite, Text string }
			}
			if err := json.Unmarshal([]byte(req.Messages[len(req.Messages)-1].Content), &res); err != nil || len(res.Passages) == 0 {
				return robbytest.Text("no passage")
			}
			return robbytest.Text(res.Passages[0].Text + " [" + res.Passages[0].Cite + "]")
		}),
	)
	stdout.Reset()
	err := run(t.Context(), []string{"run", "-kb", kb, "-embed-model", "embed", "-base-url", srv.URL, "-model", "m", "how do I roll back?"}, nil, &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	assert.Contains(t, stdout.String(), "to roll back, restart it.")
	assert.Contains(t, stdout.String(), "["+filepath.ToSlash(filepath.Join(docs, "deploy.md"))+":5-7]")
	assert.Contains(t, srv.Requests()[0].Tools, "search_knowledge")

	// -budget-tokens: the run stops before the request past the limit.
	srv.Reply(robbytest.ToolCalls(robbytest.Call("search_knowledge", `{"query":"who owns the build?"}`)).WithUsage(90, 20))
	stdout.Reset()
	stderr.Reset()
	err = run(t.Context(), []string{"run", "-kb", kb, "-embed-model", "embed", "-base-url", srv.URL, "-model", "m",
		"-budget-tokens", "100", "who owns the build?"}, nil, &stdout, &stderr)
	assert.ErrorIs(t, err, robby.ErrBudget)
	assert.Equal(t, 1, exitCode(err, &stderr))
	assert.Contains(t, stderr.String(), "robby: budget reached: 110 used of 100 tokens")
	assert.Zero(t, srv.Pending())
}

func TestIndexNeedsAFileAndAFolder(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"index", t.TempDir()}, nil, &stdout, &stderr)
	assert.ErrorContains(t, err, "index needs -kb FILE and at least one DIR")
	err = run(t.Context(), []string{"index", "-kb", filepath.Join(t.TempDir(), "kb.db"), "/no/such/dir"}, nil, &stdout, &stderr)
	assert.ErrorContains(t, err, "no such file or directory")
}

func TestChatWithKnowledgeAsContext(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "team.md"), []byte("# Team\n\nAda owns the build.\n"), 0o644))
	kb := filepath.Join(dir, "kb.db")
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"index", "-kb", kb, dir}, nil, &stdout, &stderr), stderr.String())

	srv := upstream(t, robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		return robbytest.Text("context: " + req.Messages[0].Content)
	}))
	stdout.Reset()
	err := run(t.Context(), []string{"chat", "-kb", kb, "-kb-mode", "context", "-base-url", srv.URL}, strings.NewReader("who owns the build?\n"), &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	assert.Contains(t, stdout.String(), "Ada owns the build.")
	assert.Contains(t, stdout.String(), "["+filepath.ToSlash(filepath.Join(dir, "team.md"))+":1-3]")
	assert.Empty(t, srv.Requests()[0].Tools, "no tool in context mode")

	err = run(t.Context(), []string{"run", "-kb", kb, "-kb-mode", "both", "-base-url", srv.URL, "hi"}, nil, &stdout, &stderr)
	assert.ErrorContains(t, err, `-kb-mode "both": want tool or context`)
}

// A file that cannot be indexed is named, the rest of its folder and the
// folders after it are indexed, and the exit status says so; a folder
// given as a symbolic link is followed.
func TestIndexSkipsABadFile(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	require.NoError(t, os.MkdirAll(docs, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(docs, "a-deep.html"), []byte(strings.Repeat("<div>", 600)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(docs, "team.md"), []byte("# Team\n\nAda owns the build.\n"), 0o644))
	other := filepath.Join(dir, "other")
	require.NoError(t, os.MkdirAll(other, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(other, "ops.md"), []byte("# Ops\n\nBo runs the pager.\n"), 0o644))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(other, link))

	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"index", "-kb", filepath.Join(dir, "kb.db"), docs, link}, nil, &stdout, &stderr)
	require.Error(t, err)
	assert.ErrorContains(t, err, filepath.ToSlash(filepath.Join(docs, "a-deep.html")))
	assert.ErrorContains(t, err, "open stack of elements exceeds")
	assert.Equal(t, 1, exitCode(err, &stderr))
	assert.Equal(t, docs+": 1 added, 0 updated, 0 unchanged, 0 deleted; 1 chunks written, 0 embedded; 1 skipped\n"+
		link+": 1 added, 0 updated, 0 unchanged, 0 deleted; 1 chunks written, 0 embedded\n", stdout.String())
}
