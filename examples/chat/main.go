// Command chat is a chat agent with memory. It answers a first question, then
// streams its answer to a second one. The second only makes sense with the
// first answer in mind.
//
// It talks to any OpenAI-compatible endpoint, by default Docker Model Runner on
// this machine:
//
//	docker desktop enable model-runner --tcp 12434
//	docker model pull ai/qwen2.5
//	go run ./examples/chat
//
// OPENAI_BASE_URL, OPENAI_API_KEY and ROBBY_MODEL choose another endpoint and
// model, such as Ollama's or OpenAI's.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/openai/openai-go/v3"
	"github.com/robby-go/robby"
	"github.com/robby-go/robby/examples/internal/endpoint"
)

func main() {
	// Ctrl-C cancels the context, which stops the request in flight.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx)
	stop()
	if err != nil {
		endpoint.Report(err)
		os.Exit(1)
	}
}

// run asks two questions, the second about the answer to the first.
func run(ctx context.Context) error {
	agent, err := robby.New(
		robby.WithBaseURL(endpoint.BaseURL()),
		robby.WithAPIKey(os.Getenv("OPENAI_API_KEY")), // local servers need none
		robby.WithModel(endpoint.Model()),
		robby.WithSystem("You are a Star Trek expert. Answer in two sentences at most."),
	)
	if err != nil {
		return err
	}
	defer agent.Close()

	// A synchronous answer: add the question to the conversation, then ask
	// the model. Its answer is returned, and kept in the conversation too.
	question := "Who is the captain of the USS Enterprise NCC-1701?"
	fmt.Println("you:  ", question)
	agent.AddMessages(openai.UserMessage(question))
	answer, err := agent.ChatCompletion(ctx)
	if err != nil {
		return err
	}
	fmt.Println("robby:", answer)

	// A streamed answer: each piece of text is printed as it arrives. "His"
	// is only clear to a model that remembers the first answer.
	question = "And who is his first officer?"
	fmt.Println("\nyou:  ", question)
	agent.AddMessages(openai.UserMessage(question))
	fmt.Print("robby: ")
	_, err = agent.ChatCompletionStream(ctx, func(delta string) error {
		fmt.Print(delta)
		return nil // an error here would stop the stream
	})
	fmt.Println()
	if err != nil {
		return err
	}

	// The memory: the system prompt, two questions and two answers.
	fmt.Printf("\n(%d messages in the conversation)\n", len(agent.Messages()))
	return nil
}
