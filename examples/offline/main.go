// Command offline runs a robby agent end to end against a scripted model, in
// process. There is no LLM, no network, no API key. It is the quickest way to
// see what the ReAct loop does:
//
//	go run ./examples/offline
//
// The model is a [robbytest.Server]: an OpenAI-compatible endpoint on a local
// port. It answers each request with the next reply of its script, streamed as
// real providers stream. Everything else is the real thing: the agent, its
// tools, its limits and the events of [robby.Agent.Stream].
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

// person is the arguments of both tools. NewTool infers their JSON Schema from
// it. The json tag names the field, and the jsonschema tag describes it.
type person struct {
	Name string `json:"name" jsonschema:"the person's name"`
}

// sayHello is a typed local tool. The model's arguments are validated against
// the schema and decoded into a person before the call.
var sayHello = robby.NewTool("say_hello", "Say hello to someone",
	func(ctx context.Context, in person) (string, error) {
		return fmt.Sprintf("👋 Hello %s! 🙂", in.Name), nil
	})

// vulcanSalute takes a moment, and honours its context while it does, as a
// tool should. The calls of a turn run concurrently, so say_hello, called
// with it, finishes first.
var vulcanSalute = robby.NewTool("vulcan_salute", "Make a Vulcan salute to someone",
	func(ctx context.Context, in person) (string, error) {
		select {
		case <-time.After(20 * time.Millisecond):
			return fmt.Sprintf("🖖 Live long and prosper %s", in.Name), nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "offline demo:", err)
		os.Exit(1)
	}
}

// run is the demo, writing to w.
func run(ctx context.Context, w io.Writer) error {
	fmt.Fprintln(w, "robby offline demo — the model is scripted (robbytest), no LLM is called")

	model := robbytest.NewServer()
	defer model.Close()

	// newAgent builds an agent that talks to the scripted model, with the
	// two tools and any other options.
	newAgent := func(opts ...robby.Option) (*robby.Agent, error) {
		return robby.New(append([]robby.Option{
			robby.WithBaseURL(model.URL),
			robby.WithModel("scripted"),
			robby.WithTools(sayHello, vulcanSalute),
		}, opts...)...)
	}

	//   1. The model thinks aloud and calls both tools in one turn. It reads
	//     their results and answers in a second turn.
	heading(w, "1. A streamed run: two tools called in parallel, then the answer")
	model.Reply(
		robbytest.ToolCalls(
			robbytest.Call("say_hello", `{"name":"Bob"}`),
			robbytest.Call("vulcan_salute", `{"name":"Spock"}`),
		).WithReasoning("Two independent greetings: one turn, two calls.").
			WithText("Let me greet them both."),
		robbytest.Text("Done: I said hello to Bob and made a Vulcan salute to Spock."),
	)
	agent, err := newAgent()
	if err != nil {
		return err
	}
	defer agent.Close()
	res, err := stream(ctx, w, agent, "Say hello to Bob and make a Vulcan salute to Spock")
	if err != nil {
		return err
	}
	summary(w, "result", res)

	//   2. The same agent remembers the conversation. The model calls a tool it
	//     does not have. The error goes back to it as the tool's result, and
	//     the loop goes on.
	heading(w, "2. An unknown tool: the model reads the error and the loop goes on")
	model.Reply(
		robbytest.ToolCalls(robbytest.Call("beam_up", `{"name":"Spock"}`)),
		robbytest.Text("I cannot beam anyone up: I can only say hello and make a Vulcan salute."),
	)
	if res, err = stream(ctx, w, agent, "Now beam him up."); err != nil {
		return err
	}
	summary(w, "result", res)
	fmt.Fprintf(w, "   the conversation holds %d messages\n", len(agent.Messages()))

	if err := limits(ctx, w, model, newAgent); err != nil {
		return err
	}
	if n := model.Pending(); n > 0 {
		return fmt.Errorf("%d scripted replies were not used", n)
	}
	return nil
}

// limits shows the turn limit, then the final answer it can force, on
// agents that newAgent builds.
func limits(ctx context.Context, w io.Writer, model *robbytest.Server, newAgent func(...robby.Option) (*robby.Agent, error)) error {
	//   3. A model that never stops calling tools meets WithMaxTurns. The run
	//     ends with ErrMaxTurns and the partial result.
	heading(w, "3. WithMaxTurns(2), and the model keeps calling tools")
	model.Reply(
		robbytest.ToolCalls(robbytest.Call("say_hello", `{"name":"Kirk"}`)),
		robbytest.ToolCalls(robbytest.Call("say_hello", `{"name":"Uhura"}`)),
	)
	limited, err := newAgent(robby.WithMaxTurns(2))
	if err != nil {
		return err
	}
	defer limited.Close()
	res, err := stream(ctx, w, limited, "Say hello to the whole crew")
	if !errors.Is(err, robby.ErrMaxTurns) {
		return fmt.Errorf("want ErrMaxTurns, got %v", err)
	}
	fmt.Fprintf(w, "   error: %v (errors.Is ErrMaxTurns: %t)\n", err, errors.Is(err, robby.ErrMaxTurns))
	summary(w, "partial result", res)

	//   4. With WithFinalAnswer, the last allowed turn offers no tools. The
	//     model has to answer with what it has.
	heading(w, "4. WithMaxTurns(2) + WithFinalAnswer: the last turn has to answer")
	model.Reply(
		robbytest.ToolCalls(robbytest.Call("say_hello", `{"name":"Kirk"}`)),
		robbytest.Text("I said hello to Kirk; the rest of the crew will have to wait."),
	)
	final, err := newAgent(robby.WithMaxTurns(2), robby.WithFinalAnswer())
	if err != nil {
		return err
	}
	defer final.Close()
	if res, err = stream(ctx, w, final, "Say hello to the whole crew"); err != nil {
		return err
	}
	// The scripted model answers as told. The requests show what a real one
	// would have been offered on the last turn.
	reqs := model.Requests()
	offered := "none"
	if tools := reqs[len(reqs)-1].Tools; len(tools) > 0 {
		offered = strings.Join(tools, ", ")
	}
	fmt.Fprintf(w, "   tools offered on turn 2: %s\n", offered)
	summary(w, "result", res)
	return nil
}

// stream runs prompt on the agent, printing its events as they come, and
// returns the run's result and error.
func stream(ctx context.Context, w io.Writer, agent *robby.Agent, prompt string) (*robby.Result, error) {
	fmt.Fprintf(w, "   you › %s\n", prompt)
	var (
		res  *robby.Result
		err  error
		open robby.EventKind // the kind of the deltas being printed, if any
	)
	for ev, evErr := range agent.Stream(ctx, prompt) {
		// Deltas continue their line; any other event ends it.
		if open != 0 && ev.Kind != open {
			fmt.Fprintln(w)
			open = 0
		}
		switch ev.Kind {
		case robby.EventReasoning, robby.EventText:
			if open == 0 {
				label := "model"
				if ev.Kind == robby.EventReasoning {
					label = "think"
				}
				fmt.Fprintf(w, "   %d │ %s › ", ev.Turn, label)
				open = ev.Kind
			}
			fmt.Fprint(w, ev.Delta)
		case robby.EventToolCall:
			fmt.Fprintf(w, "   %d │ call  › %s %s\n", ev.Turn, ev.ToolCall.Name, ev.ToolCall.Arguments)
		case robby.EventToolResult:
			// Output is what the model reads: the tool's result, or its error.
			fmt.Fprintf(w, "   %d │ tool  › %s → %s\n", ev.Turn, ev.ToolCall.Name, ev.ToolResult.Output)
		case robby.EventDone:
			// The last event: the result, paired with the run's error.
			res, err = ev.Result, evErr
		}
	}
	return res, err
}

func heading(w io.Writer, title string) {
	fmt.Fprintf(w, "\n%s\n", title)
}

func summary(w io.Writer, label string, res *robby.Result) {
	fmt.Fprintf(w, "   %s: %s, %s, %d tokens\n", label,
		plural(res.Turns, "turn"), plural(len(res.ToolCalls), "tool call"), res.Usage.TotalTokens)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
