package a2aserver_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/a2aserver"
	"github.com/robby-go/robby/robbytest"
)

// An agent served over A2A, and called by a2a-go's client, made from the
// agent's card.
func Example() {
	model := robbytest.NewServer() // a scripted model; any OpenAI-compatible endpoint will do
	defer model.Close()
	model.Reply(robbytest.Text("Hello!"))
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"), robby.WithName("greeter"))
	if err != nil {
		panic(err)
	}
	defer agent.Close()

	h := a2aserver.New(agent, a2aserver.Options{Description: "Greets."})
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	ctx := context.Background()
	card, err := agentcard.DefaultResolver.Resolve(ctx, srv.URL)
	if err != nil {
		panic(err)
	}
	client, err := a2aclient.NewFromCard(ctx, card)
	if err != nil {
		panic(err)
	}
	defer client.Destroy()
	res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("Hi"))})
	if err != nil {
		panic(err)
	}
	task := res.(*a2a.Task)
	fmt.Println(card.Name, "-", card.Description)
	fmt.Println(task.Status.State, task.Artifacts[0].Parts[0].Content)
	// Output:
	// greeter - Greets.
	// TASK_STATE_COMPLETED Hello!
}
