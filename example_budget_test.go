package robby_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

// A run that may spend at most 0.01 (dollars, say) on model calls: the
// model keeps searching, and the run stops once the budget is spent,
// with what it did so far.
func ExampleWithBudget() {
	search := robbytest.ToolCalls(robbytest.Call("search", `{"query":"robby"}`)).WithUsage(2000, 100)
	model := scripted(search, search, search, search)
	defer model.Close()

	tool := robby.NewTool("search", "Searches the web", func(_ context.Context, in struct {
		Query string `json:"query"`
	}) (string, error) {
		return "nothing new about " + in.Query, nil
	})
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("gpt-4.1"), robby.WithTools(tool),
		robby.WithPrices(map[string]robby.Price{"gpt-4.1": {Input: 2, CachedInput: 0.5, Output: 8}}),
		robby.WithBudget(robby.Budget{Cost: 0.01}))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()

	res, err := agent.Run(context.Background(), "Find news about robby.")
	var budget *robby.BudgetError
	if errors.As(err, &budget) {
		fmt.Printf("stopped on %s after %d turns: spent %.4f of %.4f\n", budget.Limit, res.Turns, budget.Used.Cost, budget.Max.Cost)
	}
	fmt.Printf("the run's cost: %.4f, its searches: %d\n", res.Usage.Cost, len(res.ToolCalls))
	// Output:
	// stopped on cost after 3 turns: spent 0.0144 of 0.0100
	// the run's cost: 0.0144, its searches: 3
}
