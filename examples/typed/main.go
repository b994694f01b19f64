// Command typed extracts a typed record from free text with [robby.RunTyped].
// The answer is a Go value, its JSON Schema inferred from the struct. It is
// validated and decoded strictly, and repaired by the model when it does not
// fit.
//
// By default the model is scripted ([robbytest]), in process: no LLM, no
// network. With OPENAI_BASE_URL set, it asks that endpoint instead
// (OPENAI_API_KEY and ROBBY_MODEL as usual):
//
//	go run ./examples/typed
//	OPENAI_BASE_URL=http://localhost:11434/v1 ROBBY_MODEL=qwen2.5 go run ./examples/typed
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/examples/internal/endpoint"
	"github.com/robby-go/robby/robbytest"
)

// contact is the record to extract. The json tags name the fields, and the
// jsonschema tags describe them to the model. omitempty makes a field optional,
// and a pointer tells "not said" from empty.
type contact struct {
	Name     string   `json:"name" jsonschema:"the person's full name"`
	Email    string   `json:"email" jsonschema:"their email address"`
	Company  *string  `json:"company,omitempty" jsonschema:"the company they work for, if the text says"`
	Topics   []string `json:"topics" jsonschema:"what they want to talk about, a few words each"`
	Priority string   `json:"priority" jsonschema:"how urgent the message is: low, normal or high"`
}

const message = `Hi! I'm Ada Lovelace, from Analytical Engines Ltd. Could we talk about
your pricing for teams and the on-premise option? It is rather urgent: our
board meets on Friday. Reach me at ada@engines.example.`

// scripted is what the offline model answers: the record as a model would write
// it. It comes first without a required field, which the model is asked to
// repair.
var scripted = []robbytest.Reply{
	robbytest.Answer(`{"name": "Ada Lovelace", "email": "ada@engines.example", "topics": ["team pricing", "on-premise"]}`),
	robbytest.Answer(`{"name": "Ada Lovelace", "email": "ada@engines.example", "company": "Analytical Engines Ltd",
  "topics": ["team pricing", "on-premise option"], "priority": "high"}`),
}

// config is the endpoint the example talks to.
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

// run extracts the contact from the message; without a base URL, from the
// scripted model.
func run(ctx context.Context, w io.Writer, cfg config) error {
	if cfg.baseURL == "" {
		model := robbytest.NewServer()
		defer model.Close()
		model.Reply(scripted...)
		cfg = config{baseURL: model.URL, model: "scripted"}
		fmt.Fprintln(w, "the model is scripted (robbytest); set OPENAI_BASE_URL to ask a real one")
	}
	agent, err := robby.New(robby.WithBaseURL(cfg.baseURL), robby.WithAPIKey(cfg.apiKey), robby.WithModel(cfg.model),
		robby.WithSystem("You extract contact records from messages. Use only what the message says."))
	if err != nil {
		return err
	}
	defer agent.Close()

	c, res, err := robby.RunTyped[contact](ctx, agent, "Extract the contact from this message:\n\n"+message)
	if err != nil {
		return err // an *robby.AnswerError says what never fitted
	}
	fmt.Fprintf(w, "name:     %s\nemail:    %s\n", c.Name, c.Email)
	if c.Company != nil {
		fmt.Fprintf(w, "company:  %s\n", *c.Company)
	}
	fmt.Fprintf(w, "topics:   %s\npriority: %s\n", strings.Join(c.Topics, "; "), c.Priority)
	b, _ := json.Marshal(c)
	fmt.Fprintf(w, "as JSON:  %s\n", b)
	fmt.Fprintf(w, "%d requests, %d tokens\n", res.Turns, res.Usage.TotalTokens)
	return nil
}
