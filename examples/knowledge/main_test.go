package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/robby-go/robby/knowledge"
	"github.com/robby-go/robby/robbytest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRunOffline runs the example against robbytest, which serves both the
// chat model (scripted: it answers with the first passage it was given,
// citing it) and the embeddings (deterministic).
func TestRunOffline(t *testing.T) {
	srv := robbytest.NewServer()
	defer srv.Close()
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call(knowledge.ToolName, `{"query":"paid holiday days carry over"}`)),
		robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			var res struct{ Passages []knowledge.Passage }
			if err := json.Unmarshal([]byte(req.Messages[len(req.Messages)-1].Content), &res); err != nil || len(res.Passages) == 0 {
				return robbytest.Text("no passage")
			}
			return robbytest.Text(oneLine(res.Passages[0].Text) + " [" + res.Passages[0].Cite + "]")
		}),
		robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			ctx := req.Messages[1].Content // after the system prompt
			_, rest, _ := strings.Cut(ctx, "\n[")
			tag, rest, _ := strings.Cut(rest, "]")
			_, text, _ := strings.Cut(rest, "\n")
			text, _, _ = strings.Cut(text, "\n</passage ") // the first passage only
			return robbytest.Text(oneLine(text) + " [" + tag + "]")
		}),
	)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	err := run(ctx, &out, config{baseURL: srv.URL, apiKey: "k", model: "m", embedURL: srv.URL, embedModel: "embed"})
	if err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"indexed 3 files: 6 chunks, 6 embedded",
		"(tool mode)\n## Holidays Everyone has 27 days of paid holiday a year, plus public holidays. Book them",
		"up to five unused days carry over to the next year. [handbook/leave.md:3-6]",
		`searched: {"query":"paid holiday days carry over"}`,
		"(context mode)\n## How to claim Photograph each receipt and submit the claim in the finance app within 30 days. " +
			"Refunds arrive with the next salary. [handbook/expenses.md:8-10]",
		"passages given: handbook/expenses.md:8-10, ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q\noutput:\n%s", want, got)
		}
	}
}

// oneLine returns s with its runs of white space made one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
