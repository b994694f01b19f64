// Command eval runs the example dataset, cases.jsonl, on an agent with a lookup
// tool, five times a case. It writes report.html. `robby eval` and `go test`
// (main_test.go) run the same dataset.
//
// By default the model is scripted: each case's script (in its metadata) plays
// it, in process ([eval.Scripted]). With OPENAI_BASE_URL set, that endpoint
// answers and judges (OPENAI_API_KEY and ROBBY_MODEL as usual):
//
//	go run ./examples/eval
//	OPENAI_BASE_URL=http://localhost:11434/v1 ROBBY_MODEL=qwen2.5 go run ./examples/eval
//
// The dataset is built into the program, so it runs from any directory;
// report.html is written to the current one.
package main

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/eval"
	"github.com/robby-go/robby/examples/internal/endpoint"
)

// lookup is the tool the cases expect the agent to call.
var lookup = robby.NewTool("lookup", "Look up the capital of a country",
	func(_ context.Context, in struct {
		Country string `json:"country" jsonschema:"the country's English name"`
	}) (string, error) {
		if capital, ok := capitals[strings.ToLower(in.Country)]; ok {
			return capital, nil
		}
		return "", fmt.Errorf("no capital known for %q", in.Country)
	})

// cases is the dataset, cases.jsonl, which robby eval also reads.
//
//go:embed cases.jsonl
var cases []byte

var capitals = map[string]string{"norway": "Oslo", "sweden": "Stockholm", "denmark": "Copenhagen", "finland": "Helsinki"}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := run(ctx, os.Stdout, os.Getenv("OPENAI_BASE_URL"))
	if err != nil {
		endpoint.Report(err)
		os.Exit(1)
	}
	if !rep.OK {
		os.Exit(1)
	}
}

// run runs the dataset, prints the table and writes report.html; without
// a base URL, against the scripts.
func run(ctx context.Context, w io.Writer, baseURL string) (*eval.Report, error) {
	agent, judge, done, err := agents(baseURL, w)
	if err != nil {
		return nil, err
	}
	defer done()
	d, err := eval.ReadJSONL(bytes.NewReader(cases), judge)
	if err != nil {
		return nil, err
	}
	rep, err := eval.Run(ctx, d, agent, eval.WithRepeat(5))
	if err != nil {
		return nil, err
	}
	if err := rep.WriteTable(w); err != nil {
		return nil, err
	}
	page, err := os.Create("report.html")
	if err != nil {
		return nil, err
	}
	defer page.Close()
	return rep, rep.WriteHTML(page)
}

// agents builds the agent and its judge, on baseURL or on the scripts,
// and the function that closes them.
func agents(baseURL string, w io.Writer) (agent, judge *robby.Agent, done func(), err error) {
	model, judgeURL := endpoint.Model(), baseURL
	var script *eval.Scripted
	tools := []robby.Tool{lookup}
	if baseURL == "" {
		if script, err = loadScript(); err != nil {
			return nil, nil, nil, err
		}
		baseURL, judgeURL, tools = script.Model.URL, script.Judge.URL, script.Tools()
		fmt.Fprintln(w, "the model is scripted (the cases' scripts); set OPENAI_BASE_URL to ask a real one")
	}
	key := robby.WithAPIKey(os.Getenv("OPENAI_API_KEY"))
	agent, err = robby.New(robby.WithBaseURL(baseURL), key, robby.WithModel(model), robby.WithTools(tools...),
		robby.WithSystem("Answer briefly. Use the lookup tool for capitals."))
	if err == nil {
		judge, err = robby.New(robby.WithBaseURL(judgeURL), key, robby.WithModel(model))
	}
	done = func() {
		for _, a := range []*robby.Agent{agent, judge} {
			if a != nil {
				a.Close()
			}
		}
		if script != nil {
			script.Close()
		}
	}
	if err != nil {
		done()
		return nil, nil, nil, err
	}
	return agent, judge, done, nil
}

// loadScript starts the scripted model and judge of the cases. The judge
// checks need an agent to load; this one is never asked.
func loadScript() (*eval.Scripted, error) {
	unasked, err := robby.New(robby.WithModel("unasked"), robby.WithBaseURL("http://127.0.0.1:1"))
	if err != nil {
		return nil, err
	}
	defer unasked.Close()
	d, err := eval.ReadJSONL(bytes.NewReader(cases), unasked)
	if err != nil {
		return nil, err
	}
	return eval.NewScripted(d)
}
