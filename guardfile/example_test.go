package guardfile_test

import (
	"fmt"
	"log"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/guardfile"
)

func ExampleParse() {
	guards, err := guardfile.Parse("guards.json", []byte(`{"guards": [
		{"name": "no-keys", "on": "output", "match": "sk-[A-Za-z0-9]{20,}", "action": "redact", "replacement": "[secret]"},
		{"on": "tool_call", "tool": "shell*", "match": "rm\\s+-rf", "action": "block"}]}`))
	if err != nil {
		log.Fatal(err)
	}
	for _, g := range guards {
		fmt.Println(g.Name, g.On, g.Tool, g.Action, g.Pattern)
	}
	// The agent takes them as they are.
	agent, err := robby.New(robby.WithModel("ai/qwen2.5"), robby.WithGuards(guards...))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()

	_, err = guardfile.Parse("guards.json", []byte(`{"guards": [
		{"on": "output",
		 "match": "[0-9", "action": "block"}]}`))
	fmt.Println(err)
	// Output:
	// no-keys output  redact sk-[A-Za-z0-9]{20,}
	//  tool_call shell* block rm\s+-rf
	// guards file guards.json: line 3: guard 1: "match": error parsing regexp: missing closing ]: `[0-9`
}
