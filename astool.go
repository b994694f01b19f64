package robby

import (
	"context"
	"encoding/json"
	"fmt"
)

// MaxAgentDepth bounds how deep agents used as tools ([Agent.AsTool],
// [AgentTool]) may call one another: a call deeper than that fails with
// an error the calling model reads, so agents that call each other cannot
// recurse forever.
const MaxAgentDepth = 4

type depthKey struct{}

// agentPrompt is the input of [Agent.AsTool].
type agentPrompt struct {
	Prompt string `json:"prompt" jsonschema:"the task for the agent, with everything it needs to know"`
}

// AsTool returns a tool that hands a task to the agent: each call runs a
// fresh conversation of its own (the agent's system prompt and nothing
// else), with the agent's model, tools and turn limit, and returns the
// agent's answer as the tool's result. The call's context bounds it:
// cancelling the run that called the tool cancels the agent's run.
// Calls nest at most [MaxAgentDepth] deep.
//
// For typed input and output, use [AgentTool].
func (a *Agent) AsTool(name, description string) Tool {
	return NewTool(name, description, func(ctx context.Context, in agentPrompt) (string, error) {
		ctx, err := deeper(ctx, name)
		if err != nil {
			return "", err
		}
		res, err := a.fresh().Run(ctx, in.Prompt)
		if err != nil {
			return "", fmt.Errorf("agent %q: %w", name, err)
		}
		return res.Text, nil
	})
}

// AgentTool is [Agent.AsTool] with typed input and output: the model calls
// the tool with an In, which the agent gets as its prompt in JSON, and the
// agent answers with an Out, as [RunTyped] does, opts applying.
func AgentTool[In, Out any](a *Agent, name, description string, opts ...RunOption) Tool {
	return NewTool(name, description, func(ctx context.Context, in In) (Out, error) {
		var zero Out
		ctx, err := deeper(ctx, name)
		if err != nil {
			return zero, err
		}
		prompt, err := json.Marshal(in)
		if err != nil {
			return zero, err
		}
		out, _, err := RunTyped[Out](ctx, a.fresh(), string(prompt), opts...)
		if err != nil {
			return zero, fmt.Errorf("agent %q: %w", name, err)
		}
		return out, nil
	})
}

// fresh returns an agent over a's configuration and tools with the
// conversation New began.
func (a *Agent) fresh() *Agent { return newAgent(a.core, a.core.initial) }

// deeper returns ctx one agent call deeper, or an error past MaxAgentDepth.
func deeper(ctx context.Context, name string) (context.Context, error) {
	depth, _ := ctx.Value(depthKey{}).(int)
	if depth >= MaxAgentDepth {
		return ctx, fmt.Errorf("agent %q not run: agents already call each other %d deep (MaxAgentDepth)", name, depth)
	}
	return context.WithValue(ctx, depthKey{}, depth+1), nil
}
