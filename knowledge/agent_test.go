package knowledge_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/knowledge"
	"github.com/robby-go/robby/robbytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// citeFirst is a scripted model that answers with the first passage the
// search_knowledge tool returned, citing it as it was asked to.
func citeFirst(req robbytest.Request) robbytest.Reply {
	last := req.Messages[len(req.Messages)-1]
	var res struct {
		Passages []knowledge.Passage `json:"passages"`
	}
	if last.Role != "tool" || json.Unmarshal([]byte(last.Content), &res) != nil || len(res.Passages) == 0 {
		return robbytest.Text("I found nothing.")
	}
	p := res.Passages[0]
	return robbytest.Text(p.Text + " [" + p.Cite + "]")
}

func TestAgentAnswersWithTheToolAndCites(t *testing.T) {
	ctx := context.Background()
	dir := docs(t)
	e, srv := embedder(t)
	b := open(t, knowledge.WithEmbedder(e))
	_, err := b.AddDir(ctx, dir)
	require.NoError(t, err)

	srv.Reply(
		robbytest.ToolCalls(robbytest.Call(knowledge.ToolName, `{"query":"tool call timeout"}`)),
		robbytest.Func(citeFirst),
	)
	agent, err := robby.New(robby.WithBaseURL(srv.URL), robby.WithAPIKey("k"), robby.WithModel("test"),
		robby.WithTools(knowledge.Tool(b)))
	require.NoError(t, err)
	defer agent.Close()
	res, err := agent.Run(ctx, "How long may a tool run?")
	require.NoError(t, err)

	tools := filepath.ToSlash(filepath.Join(dir, "tools/tools.md"))
	assert.Contains(t, res.Text, "two minutes by default")
	assert.Contains(t, res.Text, "["+tools+":5-7]")
	require.Len(t, res.ToolCalls, 1)
	assert.NoError(t, res.ToolCalls[0].Err)
	reqs := srv.Requests()
	assert.Contains(t, reqs[0].Tools, knowledge.ToolName)
}

func TestToolRefusesAnEmptyQuery(t *testing.T) {
	b := open(t)
	srv := robbytest.NewServer()
	defer srv.Close()
	srv.Reply(robbytest.ToolCalls(robbytest.Call(knowledge.ToolName, `{"query":"  "}`)), robbytest.Text("ok"))
	agent, err := robby.New(robby.WithBaseURL(srv.URL), robby.WithAPIKey("k"), robby.WithModel("test"),
		robby.WithTools(knowledge.Tool(b)))
	require.NoError(t, err)
	defer agent.Close()
	res, err := agent.Run(context.Background(), "hi")
	require.NoError(t, err)
	require.Len(t, res.ToolCalls, 1)
	assert.ErrorContains(t, res.ToolCalls[0].Err, "query is empty")
}

func TestContextFitsTheBudget(t *testing.T) {
	ctx := context.Background()
	b := open(t)
	var docs []knowledge.Document
	for _, id := range []string{"a.md", "b.md", "c.md"} {
		text := "# " + id + "\n\n"
		for range 30 {
			text += "Retrieval augments generation with passages. "
		}
		docs = append(docs, knowledge.Document{ID: id, Text: text, Format: knowledge.Markdown})
	}
	_, err := b.Add(ctx, docs...)
	require.NoError(t, err)

	msg, hits, err := knowledge.Context(ctx, b, "retrieval passages", knowledge.ContextOptions{MaxTokens: 800})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(msg), 800*4)
	all, err := b.Search(ctx, "retrieval passages", knowledge.SearchOptions{})
	require.NoError(t, err)
	require.Len(t, all, 5)
	assert.Less(t, len(hits), len(all), "passages past the budget are left out")
	for _, h := range hits {
		assert.Contains(t, msg, "["+h.Citation()+"] "+h.Heading+"\n")
	}

	msg, hits, err = knowledge.Context(ctx, b, "retrieval passages", knowledge.ContextOptions{MaxTokens: 100})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(msg), 400)
	require.Len(t, hits, 1, "a first passage too long is cut")
	assert.Contains(t, msg, "…")

	msg, hits, err = knowledge.Context(ctx, b, "nothing matches zebra", knowledge.ContextOptions{})
	require.NoError(t, err)
	assert.Empty(t, msg)
	assert.Empty(t, hits)
}
