// Command planner composes two agents: a planner hands research to a researcher
// agent through [robby.Agent.AsTool]. For each call, the researcher runs on a
// fresh conversation of its own. It has its own tool (a lookup of facts) and
// turn limit. Its events come in the planner's stream, nested under the call.
// Its tokens count in the planner's.
//
// By default the model is scripted ([robbytest]), in process: no LLM, no
// network. With OPENAI_BASE_URL set, both agents ask that endpoint
// (OPENAI_API_KEY and ROBBY_MODEL as usual):
//
//	go run ./examples/planner
//	OPENAI_BASE_URL=http://localhost:11434/v1 ROBBY_MODEL=qwen2.5 go run ./examples/planner
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/examples/internal/endpoint"
	"github.com/robby-go/robby/robbytest"
)

// topic is the researcher's tool's input.
type topic struct {
	Key string `json:"key" jsonschema:"what to look up: opening_hours, ticket_price or best_time"`
}

var facts = map[string]string{
	"opening_hours": "9:30 to 23:45 every day",
	"ticket_price":  "36.10 EUR to the top by lift",
	"best_time":     "early morning or after 21:00, when queues are short",
}

var lookup = robby.NewTool("lookup", "Look up a fact about visiting the Eiffel Tower",
	func(_ context.Context, in topic) (string, error) {
		if f, ok := facts[in.Key]; ok {
			return f, nil
		}
		return "", fmt.Errorf("no fact %q; try opening_hours, ticket_price or best_time", in.Key)
	})

// scripted is what the offline model answers, request after request. First the
// planner's, then the researcher's inside the planner's call, then the
// planner's again.
var scripted = []robbytest.Reply{
	robbytest.ToolCalls(robbytest.Call("research", `{"prompt":"When is the Eiffel Tower open, what does it cost, and when are queues short?"}`)),
	robbytest.ToolCalls(robbytest.Call("lookup", `{"key":"opening_hours"}`), robbytest.Call("lookup", `{"key":"ticket_price"}`),
		robbytest.Call("lookup", `{"key":"best_time"}`)),
	robbytest.Text("Open 9:30 to 23:45 daily; 36.10 EUR to the top; go early or after 21:00."),
	robbytest.Text("Plan: arrive at 9:15, buy the 36.10 EUR lift ticket, be at the top before the crowds."),
}

// config is the endpoint the agents talk to.
type config struct{ baseURL, apiKey, model string }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg := config{baseURL: os.Getenv("OPENAI_BASE_URL"), apiKey: os.Getenv("OPENAI_API_KEY"), model: endpoint.Model()}
	if err := run(ctx, os.Stdout, cfg); err != nil {
		endpoint.Report(err)
		os.Exit(1)
	}
}

// run plans a visit and prints each step, the researcher's indented under
// the call that ran it.
func run(ctx context.Context, w io.Writer, cfg config) error {
	if cfg.baseURL == "" {
		model := robbytest.NewServer()
		defer model.Close()
		model.Reply(scripted...)
		cfg = config{baseURL: model.URL, model: "scripted"}
		fmt.Fprintln(w, "the model is scripted (robbytest); set OPENAI_BASE_URL to ask a real one")
	}
	common := []robby.Option{robby.WithBaseURL(cfg.baseURL), robby.WithAPIKey(cfg.apiKey), robby.WithModel(cfg.model)}
	researcher, err := robby.New(append(common,
		robby.WithSystem("You research facts with the lookup tool and answer in one short paragraph."),
		robby.WithTools(lookup), robby.WithMaxTurns(4))...)
	if err != nil {
		return err
	}
	defer researcher.Close()
	planner, err := robby.New(append(common,
		robby.WithSystem("You plan visits. Ask the research tool for the facts you need, then give a short plan."),
		robby.WithTools(researcher.AsTool("research", "Finds facts about visiting the Eiffel Tower")))...)
	if err != nil {
		return err
	}
	defer planner.Close()

	for ev, err := range planner.Stream(ctx, "Plan my visit to the Eiffel Tower tomorrow.") {
		// An event of the researcher comes wrapped in an EventAgent:
		// Innermost gives it, with the calls it came through.
		inner, path := ev.Innermost()
		indent := strings.Repeat("    ", len(path))
		switch inner.Kind {
		case robby.EventToolCall:
			fmt.Fprintf(w, "%s→ %s %s\n", indent, inner.ToolCall.Name, inner.ToolCall.Arguments)
		case robby.EventToolResult:
			fmt.Fprintf(w, "%s← %s: %s\n", indent, inner.ToolCall.Name, inner.ToolResult.Output)
		case robby.EventDone:
			if err != nil {
				return err
			}
			res := ev.Result
			fmt.Fprintf(w, "plan: %s\n%d planner turns, %d tokens (the researcher's included)\n",
				res.Text, res.Turns, res.Usage.TotalTokens)
		}
	}
	return nil
}
