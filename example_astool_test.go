package robby_test

import (
	"context"
	"fmt"
	"log"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

// A writer agent hands research to a researcher agent, used as its tool:
// the researcher's events come in the writer's stream, wrapped in
// EventAgent events naming the call, and its tokens count in the
// writer's usage.
func ExampleAgent_AsTool() {
	model := scripted(
		robbytest.ToolCalls(robbytest.Call("research", `{"prompt":"When was Go 1.0 released?"}`)).WithUsage(40, 10),
		robbytest.Text("March 2012.").WithUsage(20, 5), // the researcher's answer
		robbytest.Text("Go 1.0 came out in March 2012.").WithUsage(60, 12),
	)
	defer model.Close()
	researcher, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("test"),
		robby.WithSystem("You find facts and answer in one line."))
	if err != nil {
		log.Fatal(err)
	}
	defer researcher.Close()
	writer, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("test"),
		robby.WithTools(researcher.AsTool("research", "Finds a fact")))
	if err != nil {
		log.Fatal(err)
	}
	defer writer.Close()

	speaker := ""
	say := func(who, text string) {
		if who != speaker {
			if speaker != "" {
				fmt.Println()
			}
			fmt.Print(who, ": ")
			speaker = who
		}
		fmt.Print(text)
	}
	for e, err := range writer.Stream(context.Background(), "Write one sentence on Go 1.0's release.") {
		if err != nil {
			log.Fatal(err)
		}
		switch inner, calls := e.Innermost(); {
		case inner.Kind == robby.EventText && len(calls) > 0:
			say(calls[len(calls)-1].Name, inner.Delta) // the researcher, through its call
		case e.Kind == robby.EventText:
			say("writer", e.Delta)
		case e.Kind == robby.EventDone:
			fmt.Printf("\ntokens: %d (the researcher's 25 included)\n", e.Result.Usage.TotalTokens)
		}
	}
	// Output:
	// research: March 2012.
	// writer: Go 1.0 came out in March 2012.
	// tokens: 147 (the researcher's 25 included)
}
