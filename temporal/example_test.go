package temporal_test

import (
	"context"
	"fmt"
	"log"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/temporal"
)

// A worker serves the agent "assistant", with its key; any other process
// starts a durable run by name, and waits for its answer. The run goes on
// if either process dies.
func Example() {
	c, err := client.Dial(client.Options{HostPort: "127.0.0.1:7233"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// The worker: the agent, its model and key, are never in a history.
	agent, err := robby.New(robby.WithModel("gpt-4o"), robby.WithAPIKey("sk-..."))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	w := worker.New(c, temporal.DefaultTaskQueue, worker.Options{})
	temporal.Register(w, temporal.Agents{"assistant": agent}, temporal.Options{
		Events: func(workflowID string, e robby.Event) { // streamed as they happen, on the worker
			if e.Kind == robby.EventText {
				fmt.Print(e.Delta)
			}
		},
	})
	if err := w.Start(); err != nil {
		log.Fatal(err)
	}
	defer w.Stop()

	// The caller: a name and a prompt.
	ctx := context.Background()
	run, err := temporal.Start(ctx, c, client.StartWorkflowOptions{ID: "trip-42"},
		temporal.Request{Agent: "assistant", Prompt: "Plan my trip to Lyon", Approve: []string{"book_train"}})
	if err != nil {
		log.Fatal(err)
	}
	res, err := run.Result(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text)
}
