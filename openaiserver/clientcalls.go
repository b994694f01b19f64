package openaiserver

// What a client's messages may hold of tool calls. Only the model calls the
// agent's tools. A client's input so carries only calls of its own tools (those
// of the request) and their outputs.

import (
	"fmt"

	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby"
)

// onlyClientCalls checks that input holds no call of one of the agent's own
// tools, and no output for one. The client sent input after history, the stored
// conversation it continues, if any. A call there would be run by the agent, as
// one a crash left unanswered. Or the model would read it as its own, with
// arguments or a result of the client's choosing.
func onlyClientCalls(agent *robby.Agent, history, input []openai.ChatCompletionMessageParamUnion) error {
	own := map[string]bool{}
	for _, t := range agent.Tools() {
		own[t.Name()] = true
	}
	if len(own) == 0 {
		return nil
	}
	ownIDs := map[string]bool{} // the calls of the agent's tools in history
	for _, m := range history {
		if a := m.OfAssistant; a != nil {
			for _, c := range a.ToolCalls {
				if f := c.OfFunction; f != nil && own[f.Function.Name] {
					ownIDs[f.ID] = true
				}
			}
		}
	}
	for _, m := range input {
		if a := m.OfAssistant; a != nil {
			for _, c := range a.ToolCalls {
				if name := callName(c); own[name] {
					return fmt.Errorf("tool call %q names %q, one of the agent's own tools: only the model calls them; "+
						"a client's input holds calls of the request's tools only", callID(c), name)
				}
			}
		}
		if t := m.OfTool; t != nil && ownIDs[t.ToolCallID] {
			return fmt.Errorf("tool output for call %q answers a call of one of the agent's own tools: only the model calls them, "+
				"and the agent runs them", t.ToolCallID)
		}
	}
	return nil
}

// callName returns the name of the tool a call names.
func callName(c openai.ChatCompletionMessageToolCallUnionParam) string {
	switch {
	case c.OfFunction != nil:
		return c.OfFunction.Function.Name
	case c.OfCustom != nil:
		return c.OfCustom.Custom.Name
	}
	return ""
}

// callID returns a call's ID.
func callID(c openai.ChatCompletionMessageToolCallUnionParam) string {
	if id := c.GetID(); id != nil {
		return *id
	}
	return ""
}
