package robbytest_test

import (
	"context"
	"fmt"
	"log"
	"testing"

	"go.uber.org/goleak"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func ExampleServer() {
	srv := robbytest.NewServer()
	defer srv.Close()
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("lookup", `{"key":"answer"}`)),
		robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			last := req.Messages[len(req.Messages)-1] // the tool's result
			return robbytest.Text("The answer is " + last.Content + ".")
		}),
	)

	lookup := robby.FuncTool("lookup", "Looks a key up", nil, func(context.Context, map[string]any) (any, error) {
		return "42", nil
	})
	agent, err := robby.New(robby.WithBaseURL(srv.URL), robby.WithModel("test"), robby.WithTools(lookup))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	res, err := agent.Run(context.Background(), "What is the answer?")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text)
	for _, req := range srv.Requests() {
		fmt.Println(len(req.Messages), "messages,", req.Tools)
	}
	// Output:
	// The answer is 42.
	// 1 messages, [lookup]
	// 3 messages, [lookup]
}
