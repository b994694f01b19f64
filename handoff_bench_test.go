package robby

import (
	"context"
	"strings"
	"testing"

	"github.com/robby-go/robby/robbytest"
)

// BenchmarkHandoff compares a handoff's cost with a plain turn's: allocations
// are the figure to read. Each run of "handoff" is two model calls (triage
// hands over, billing answers), as "tool-turn" (a tool call, then the
// answer) is; "team-turn" is a team's root answering in one turn, as
// "plain-turn" does without a team.
func BenchmarkHandoff(b *testing.B) {
	srv := robbytest.NewServer()
	b.Cleanup(srv.Close)
	srv.Fallback(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case req.Messages[0].Content == "You route." && strings.HasPrefix(last.Content, "hand over"):
			return robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"a refund"}`))
		case last.Role == "user" && strings.HasPrefix(last.Content, "add"):
			return robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`))
		}
		return robbytest.Text("Done.")
	}))
	ctx := context.Background()
	run := func(b *testing.B, a *Agent, prompt string) {
		b.ReportAllocs()
		for b.Loop() {
			a.Reset()
			if _, err := a.Run(ctx, prompt); err != nil {
				b.Fatal(err)
			}
		}
	}
	team := func(b *testing.B) *Agent {
		billing := benchAgent(b, srv, WithName("billing"), WithSystem("You bill."))
		return benchAgent(b, srv, WithName("triage"), WithSystem("You route."), WithTools(addTool),
			WithHandoffs(Handoff{To: "billing"}), WithTeam(billing))
	}
	b.Run("plain-turn", func(b *testing.B) { run(b, benchAgent(b, srv, WithSystem("You route.")), "hello") })
	b.Run("team-turn", func(b *testing.B) { run(b, team(b), "hello") })
	b.Run("tool-turn", func(b *testing.B) { run(b, benchAgent(b, srv, WithSystem("You route."), WithTools(addTool)), "add") })
	b.Run("handoff", func(b *testing.B) { run(b, team(b), "hand over") })
}

func benchAgent(b *testing.B, srv *robbytest.Server, opts ...Option) *Agent {
	a, err := New(append([]Option{WithBaseURL(srv.URL), WithAPIKey(""), WithModel("test-model")}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	return a
}
