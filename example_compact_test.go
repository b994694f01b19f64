package robby_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

// A conversation longer than the model's context window keeps working:
// here the server holds 300 tokens and refuses more, as llama.cpp does.
// robby learns the window from its first refusal, then leaves the oldest
// turns out of each request. The conversation keeps them all.
func ExampleWithCompaction() {
	srv := robbytest.NewServer()
	defer srv.Close()
	srv.ContextLimit(300, robbytest.LlamaCpp)
	agent, err := robby.New(robby.WithBaseURL(srv.URL), robby.WithAPIKey(""), robby.WithModel("local"),
		robby.WithCompaction(robby.DropOldestTurns()))
	if err != nil {
		panic(err)
	}
	defer agent.Close()
	for i := range 10 {
		srv.Reply(robbytest.Text(fmt.Sprintf("Noted, fact %d. %s", i, strings.Repeat("I will remember it. ", 4))))
		for ev, err := range agent.Stream(context.Background(), fmt.Sprintf("Fact %d: %s", i, strings.Repeat("this matters. ", 6))) {
			if err != nil {
				panic(err)
			}
			if ev.Kind == robby.EventCompaction {
				c := ev.Compaction
				fmt.Printf("turn %d: compacted (%s, retry %v), %d → %d tokens\n", i, c.Policy, c.Retry, c.TokensBefore, c.TokensAfter)
			}
		}
	}
	fmt.Println(len(agent.Messages()), "messages kept")
	// Output:
	// turn 4: compacted (drop, retry true), 320 → 145 tokens
	// turn 6: compacted (drop, retry false), 287 → 145 tokens
	// turn 8: compacted (drop, retry false), 287 → 145 tokens
	// 20 messages kept
}
