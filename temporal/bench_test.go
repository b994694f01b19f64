package temporal_test

import (
	"context"
	"fmt"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/temporal"
	"github.com/robby-go/robby/temporal/temporaltest"
)

// benchModel calls the add tool when the last message is the user's, and
// answers otherwise: two turns a run.
func benchModel(b *testing.B) *robbytest.Server {
	model := robbytest.NewServer()
	b.Cleanup(model.Close)
	model.Fallback(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		if req.Messages[len(req.Messages)-1].Role == "user" {
			return robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`))
		}
		return robbytest.Text("3")
	}))
	return model
}

// BenchmarkDurableRun runs the same two-turn run (a tool call, then the
// answer) in process and as a workflow on a local dev server, the worker
// in this process: the difference is the workflow's overhead, per run of
// two turns (two model activities, one tool activity). Allocations count
// the caller's, the worker's and the SDK's, in this process; the server's
// are its own.
func BenchmarkDurableRun(b *testing.B) {
	model := benchModel(b)
	add, _ := newAdd()
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"), robby.WithTools(add))
	if err != nil {
		b.Fatal(err)
	}
	defer agent.Close()
	ctx := context.Background()
	b.Run("in-process", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res, err := agent.Clone().Run(ctx, "add"); err != nil || res.Text != "3" {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("temporal", func(b *testing.B) {
		c := dial(b, temporaltest.StartServer(b))
		w := worker.New(c, "bench", worker.Options{})
		temporal.Register(w, temporal.Agents{"calc": agent}, temporal.Options{})
		if err := w.Start(); err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			run, err := temporal.Start(ctx, c, client.StartWorkflowOptions{ID: fmt.Sprint("bench-", i), TaskQueue: "bench"},
				temporal.Request{Agent: "calc", Prompt: "add"})
			if err != nil {
				b.Fatal(err)
			}
			if res, err := run.Result(ctx); err != nil || res.Text != "3" {
				b.Fatal(res, err)
			}
		}
	})
}
