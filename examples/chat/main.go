// Command chat is a chat agent with memory: it answers a first question,
// then streams its answer to a second one that only makes sense with the
// first answer in mind.
//
// It talks to any OpenAI-compatible endpoint, by default Docker Model
// Runner on this machine:
//
//	docker desktop enable model-runner --tcp 12434
//	docker model pull ai/qwen2.5
//	go run ./examples/chat
//
// OPENAI_BASE_URL, OPENAI_API_KEY and ROBBY_MODEL choose another endpoint
// and model, such as Ollama's or OpenAI's.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"

	"github.com/openai/openai-go/v3"
	"github.com/robby-go/robby"
)

// Docker Model Runner's endpoint, for programs on the host, and its model.
const (
	defaultBaseURL = "http://localhost:12434/engines/v1"
	defaultModel   = "ai/qwen2.5"
)

func main() {
	// Ctrl-C cancels the context, which stops the request in flight.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	baseURL := getenv("OPENAI_BASE_URL", defaultBaseURL)
	err := run(ctx, baseURL)
	stop()
	if err != nil {
		report(baseURL, err)
		os.Exit(1)
	}
}

// run asks two questions, the second about the answer to the first.
func run(ctx context.Context, baseURL string) error {
	agent, err := robby.New(
		robby.WithBaseURL(baseURL),
		robby.WithAPIKey(os.Getenv("OPENAI_API_KEY")), // local servers need none
		robby.WithModel(getenv("ROBBY_MODEL", defaultModel)),
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

// getenv returns the environment variable key, or def when it is unset.
func getenv(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// report prints err on one line. When nothing answered at baseURL, it says
// how to start a model server instead.
func report(baseURL string, err error) {
	var (
		urlErr *url.Error
		netErr *net.OpError
	)
	switch {
	case errors.Is(err, context.Canceled): // Ctrl-C
		fmt.Fprintln(os.Stderr, "interrupted")
	case errors.As(err, &netErr) || errors.As(err, &urlErr):
		// Not an answer from the endpoint (that would be a *robby.APIError)
		// but a connection that failed: refused, timed out, unknown host.
		var reason error = urlErr
		if netErr != nil {
			reason = netErr
		}
		fmt.Fprintf(os.Stderr, "no model answered at %s (%v). Start Docker Model Runner: "+
			"`docker desktop enable model-runner --tcp 12434 && docker model pull ai/qwen2.5`; "+
			"or use Ollama: OPENAI_BASE_URL=http://localhost:11434/v1 ROBBY_MODEL=qwen2.5; "+
			"or OpenAI: OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=... ROBBY_MODEL=gpt-4o-mini\n",
			baseURL, reason)
	default:
		// The endpoint answered with an error, such as an unknown model
		// (a *robby.APIError), or the options were wrong.
		fmt.Fprintln(os.Stderr, err)
	}
}
