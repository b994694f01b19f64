package robby_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

// A model middleware that takes e-mail addresses out of every message
// before the model sees them. The conversation keeps them.
func ExampleWithModelMiddleware() {
	model := scripted(robbytest.Func(func(r robbytest.Request) robbytest.Reply {
		return robbytest.Text("I read: " + r.Messages[len(r.Messages)-1].Content)
	}))
	defer model.Close()

	email := regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`)
	redact := func(ctx context.Context, req *robby.ModelRequest, next robby.ModelHandler) (*robby.ModelResponse, error) {
		msgs := make([]json.RawMessage, len(req.Messages))
		for i, m := range req.Messages {
			msgs[i] = email.ReplaceAll(m, []byte("[e-mail]")) // a new slice: the original is the conversation's
		}
		req.Messages = msgs
		return next(ctx, req)
	}
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("ai/qwen2.5"), robby.WithModelMiddleware(redact))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()

	res, err := agent.Run(context.Background(), "Write to bob@example.com about lunch.")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text)
	fmt.Println(agent.Messages()[0].OfUser.Content.OfString.Value)
	// Output:
	// I read: Write to [e-mail] about lunch.
	// Write to bob@example.com about lunch.
}

// A model middleware that answers a call it has seen before from a cache,
// without asking the model again.
func ExampleModelMiddleware_cache() {
	model := scripted(robbytest.Text("Paris."))
	defer model.Close()

	var mu sync.Mutex
	cache := map[string]robby.ModelResponse{}
	cached := func(ctx context.Context, req *robby.ModelRequest, next robby.ModelHandler) (*robby.ModelResponse, error) {
		key, _ := json.Marshal([]any{req.Model, req.Messages, req.Tools})
		mu.Lock()
		res, ok := cache[string(key)]
		mu.Unlock()
		if ok {
			res.Usage = robby.Usage{} // nothing spent
			return &res, nil
		}
		fresh, err := next(ctx, req)
		if err == nil {
			mu.Lock()
			cache[string(key)] = *fresh
			mu.Unlock()
		}
		return fresh, err
	}
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("ai/qwen2.5"), robby.WithModelMiddleware(cached))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()

	for range 2 {
		res, err := agent.Clone().Run(context.Background(), "What is the capital of France?")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Text, res.Usage.TotalTokens, "tokens")
	}
	fmt.Println(len(model.Requests()), "request to the model")
	// Output:
	// Paris. 11 tokens
	// Paris. 0 tokens
	// 1 request to the model
}

// A tool middleware that lets each tool run at most once a minute; the
// model reads why a call was refused.
func ExampleWithToolMiddleware() {
	model := scripted(
		robbytest.ToolCalls(robbytest.Call("say_hello", `{"name":"Bob"}`)),
		robbytest.ToolCalls(robbytest.Call("say_hello", `{"name":"Ann"}`)),
		robbytest.Text("Done."),
	)
	defer model.Close()

	var mu sync.Mutex
	last := map[string]time.Time{}
	limit := func(ctx context.Context, call robby.ToolCall, next robby.ToolHandler) (string, error) {
		mu.Lock()
		if t, ok := last[call.Name]; ok && time.Since(t) < time.Minute {
			mu.Unlock()
			return "", errors.New("rate limited: try again in a minute")
		}
		last[call.Name] = time.Now()
		mu.Unlock()
		return next(ctx, call)
	}
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("ai/qwen2.5"),
		robby.WithTools(sayHello), robby.WithToolMiddleware(limit))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()

	res, err := agent.Run(context.Background(), "Greet Bob, then Ann")
	if err != nil {
		log.Fatal(err)
	}
	for _, call := range res.ToolCalls {
		fmt.Println(strings.TrimSpace(call.Output))
	}
	// Output:
	// 👋 Hello Bob!
	// Error: tool "say_hello": rate limited: try again in a minute
}
