package openaiserver_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
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
