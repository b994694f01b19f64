package robby_test

import (
	"context"
	"fmt"
	"log"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

// A triage agent hands the conversation over to billing, which answers, and
// keeps the conversation: the next message goes to it.
func ExampleWithTeam() {
	model := scripted(
		robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"a refund of order 7"}`)),
		robbytest.Text("Order 7 is refunded."),
		robbytest.Text("The invoice is on its way."),
	)
	defer model.Close()
	billing, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("test"),
		robby.WithName("billing"), robby.WithDescription("Refunds and invoices"),
		robby.WithSystem("You handle refunds and invoices."),
		robby.WithHandoffs(robby.Handoff{To: "triage"})) // it may hand back
	if err != nil {
		log.Fatal(err)
	}
	defer billing.Close()
	triage, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("test"),
		robby.WithName("triage"), robby.WithSystem("You route the user to the right agent."),
		robby.WithHandoffs(robby.Handoff{To: "billing", History: robby.HistoryNone}),
		robby.WithTeam(billing))
	if err != nil {
		log.Fatal(err)
	}
	defer triage.Close()

	ctx := context.Background()
	for e, err := range triage.Stream(ctx, "I want a refund for order 7.") {
		if err != nil {
			log.Fatal(err)
		}
		switch e.Kind {
		case robby.EventHandoff:
			fmt.Printf("%s -> %s: %s\n", e.Transfer.From, e.Transfer.To, e.Transfer.Reason)
		case robby.EventDone:
			fmt.Printf("%s: %s\n", e.Result.Agent, e.Result.Text)
		}
	}
	res, err := triage.Run(ctx, "And the invoice?")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s\n", res.Agent, res.Text)
	// Output:
	// triage -> billing: a refund of order 7
	// billing: Order 7 is refunded.
	// billing: The invoice is on its way.
}

// A team's conversation kept elsewhere (a durable run's history, a program's
// own store) goes on with the agent that holds it: the messages come back
// with the agents Result.Agents named.
func ExampleAgent_AddTeamMessages() {
	model := scripted(
		robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"a refund"}`)),
		robbytest.Text("Refunded."),
		robbytest.Text("The invoice is on its way."),
	)
	defer model.Close()
	newTeam := func() *robby.Agent {
		billing, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("test"), robby.WithName("billing"))
		if err != nil {
			log.Fatal(err)
		}
		triage, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("test"), robby.WithName("triage"),
			robby.WithHandoffs(robby.Handoff{To: "billing"}), robby.WithTeam(billing))
		if err != nil {
			log.Fatal(err)
		}
		return triage
	}
	ctx := context.Background()
	first := newTeam()
	defer first.Close()
	res, err := first.Run(ctx, "A refund, please.")
	if err != nil {
		log.Fatal(err)
	}

	// Another process restores the conversation, each message with its agent.
	later := newTeam()
	defer later.Close()
	later.AddTeamMessages(res.Agents, res.Messages...)
	res, err = later.Run(ctx, "And the invoice?")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s\n", res.Agent, res.Text)
	// Output:
	// billing: The invoice is on its way.
}
