package openaiserver_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/sqlitestore"
)

func ExampleNew() {
	// A scripted model stands in for a real one.
	model := robbytest.NewServer()
	defer model.Close()
	model.Reply(robbytest.Text("Hello from the agent."))
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("ai/qwen2.5"), robby.WithTools(addTool))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()

	// Any OpenAI client can now talk to the agent, whose tools run here.
	endpoint := httptest.NewServer(openaiserver.New(map[string]*robby.Agent{"robby": agent}, openaiserver.Options{}))
	defer endpoint.Close()

	client := openai.NewClient(option.WithBaseURL(endpoint.URL+"/v1"), option.WithAPIKey("unused"))
	res, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "robby",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi!")},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Choices[0].Message.Content)
	// Output: Hello from the agent.
}

func ExampleNew_responses() {
	model := robbytest.NewServer()
	defer model.Close()
	model.Reply(robbytest.Text("Hello Ada."), robbytest.Text("You are Ada."))
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("ai/qwen2.5"))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	dir, err := os.MkdirTemp("", "responses")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := sqlitestore.Open(context.Background(), filepath.Join(dir, "responses.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	// Each token is a user's; the store keeps each user's responses apart.
	endpoint := httptest.NewServer(openaiserver.New(map[string]*robby.Agent{"robby": agent}, openaiserver.Options{
		Tokens: map[string]string{"ada-token": "ada"},
		Store:  store,
	}))
	defer endpoint.Close()

	client := openai.NewClient(option.WithBaseURL(endpoint.URL+"/v1"), option.WithAPIKey("ada-token"))
	first, err := client.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "robby",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("I am Ada.")},
	})
	if err != nil {
		log.Fatal(err)
	}
	// The next request sends only its new message.
	next, err := client.Responses.New(context.Background(), responses.ResponseNewParams{
		Model:              "robby",
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("Who am I?")},
		PreviousResponseID: openai.String(first.ID),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(first.OutputText())
	fmt.Println(next.OutputText())
	fmt.Println(len(model.Requests()[1].Messages), "messages sent to the model")
	// Output:
	// Hello Ada.
	// You are Ada.
	// 3 messages sent to the model
}
