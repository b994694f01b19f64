package eval_test

import (
	"context"
	"fmt"
	"io"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/eval"
	"github.com/robby-go/robby/robbytest"
)

// A dataset of one case, run three times on a scripted model that is
// right twice: the pass rate, its interval, pass^2 and the failure.
func Example() {
	model := robbytest.NewServer()
	defer model.Close()
	model.Reply(robbytest.Text("Oslo."), robbytest.Text("Bergen."), robbytest.Text("It is Oslo."))
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("scripted"))
	if err != nil {
		panic(err)
	}
	defer agent.Close()

	ds := eval.Dataset{Name: "capitals", Cases: []eval.Case{{
		Name:       "norway",
		Input:      "What is the capital of Norway?",
		Evaluators: []eval.Evaluator{eval.Contains("Oslo"), eval.MaxTurns(1)},
	}}}
	rep, err := eval.Run(context.Background(), ds, agent, eval.WithRepeat(3), eval.WithPassK(2), eval.WithConcurrency(1))
	if err != nil {
		panic(err)
	}
	c := rep.Cases[0]
	fmt.Printf("%s: %d of %d passed, pass rate %.2f in [%.2f, %.2f], pass^2 %.2f\n",
		c.Name, c.Passed, c.Runs, c.PassRate, c.PassRateLow, c.PassRateHigh, c.PassHatK)
	fmt.Println(c.Failures[0].Reasons[0])
	// Save rep with WriteJSON as the next run's baseline (eval.Compare);
	// show it with WriteTable or WriteHTML.
	_ = rep.WriteJSON(io.Discard)
	// Output:
	// norway: 2 of 3 passed, pass rate 0.67 in [0.21, 0.94], pass^2 0.33
	// contains: the answer "Bergen." does not contain "Oslo"
}

// An evaluator of any Go function: here, an answer of at most 20 bytes.
func ExampleFunc() {
	short := eval.Func("short", func(_ context.Context, out *eval.Output) (eval.Score, error) {
		if n := len(out.Text); n > 20 {
			return eval.Score{Value: 0, Reason: fmt.Sprintf("%d bytes, more than 20", n)}, nil
		}
		return eval.Score{Value: 1, Pass: true, Reason: "short enough"}, nil
	})
	s, _ := short.Evaluate(context.Background(), &eval.Output{Text: "Oslo.", Result: new(robby.Result)})
	fmt.Println(short.Name(), s.Pass, s.Reason)
	// Output: short true short enough
}
