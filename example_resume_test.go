package robby_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

// A run pauses on a tool that a person answers, and resumes once they
// did: the program may serve other work, or other people, meanwhile.
func ExampleAgent_Resume() {
	model := scripted(
		robbytest.ToolCalls(robbytest.Call("ask_user", `{"question":"For how many people?"}`)),
		robbytest.Text("Booked: a table for 4 at 8 pm."),
	)
	defer model.Close()
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("ai/qwen2.5"))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()

	askUser := robby.WithCallerTools(openai.FunctionDefinitionParam{
		Name:        "ask_user",
		Description: openai.String("Ask the user a question; the answer comes later"),
		Parameters: openai.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{"question": map[string]any{"type": "string"}},
			"required":   []string{"question"},
		},
	})
	ctx := context.Background()
	res, err := agent.Run(ctx, "Book a table at 8 pm", askUser)
	if err != nil {
		log.Fatal(err)
	}
	var answers []robby.ToolResult
	for _, call := range res.Pending {
		var q struct{ Question string }
		if err := json.Unmarshal([]byte(call.Arguments), &q); err != nil {
			log.Fatal(err)
		}
		fmt.Println("The agent asks:", q.Question)
		answers = append(answers, robby.ToolResult{Call: call, Output: "4"}) // the user's answer, later
	}

	res, err = agent.Resume(ctx, robby.WithToolResults(answers...), askUser)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text)
	// Output:
	// The agent asks: For how many people?
	// Booked: a table for 4 at 8 pm.
}
