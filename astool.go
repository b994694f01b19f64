package robby

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
)

// MaxAgentDepth bounds how deep agents used as tools ([Agent.AsTool],
// [AgentTool]) may call one another. A deeper call fails with an error the
// calling model reads. So agents that call each other cannot recurse forever.
const MaxAgentDepth = 4

type depthKey struct{}

// agentPrompt is the input of [Agent.AsTool].
type agentPrompt struct {
	Prompt string `json:"prompt" jsonschema:"the task for the agent, with everything it needs to know"`
}

// AsTool returns a tool that hands a task to the agent. Each call runs a
// fresh conversation of its own: the agent's system prompt and nothing else.
// It uses the agent's model, tools and turn limit, and returns the agent's
// answer as the tool's result. The call's context bounds it: cancelling the
// run that called the tool cancels the agent's run. Calls nest at most
// [MaxAgentDepth] deep.
//
// In a streamed run ([Agent.Stream]), the agent's events come in the run's
// stream as they happen. Each is wrapped in an event of kind [EventAgent]
// naming the call. The tokens the agent used count in the run's
// [Result.Usage]. They also count in the usage of the turn that called it and
// in the conversation's ([Agent.Usage]).
//
// For typed input and output, use [AgentTool].
func (a *Agent) AsTool(name, description string) Tool {
	opts := []RunOption{asTool(name, description)}
	return agentTool(a, NewTool(name, description, func(ctx context.Context, in agentPrompt) (string, error) {
		ctx, err := deeper(ctx, name)
		if err != nil {
			return "", err
		}
		res, err := a.fresh().run(ctx, promptMessage(in.Prompt), opts, nestedEmitter(ctx))
		addAgentUsage(ctx, res.Usage)
		if err != nil {
			return "", fmt.Errorf("agent %q: %w", name, err)
		}
		return res.Text, nil
	}))
}

// AgentTool is [Agent.AsTool] with typed input and output. The model calls
// the tool with an In, which the agent gets as its prompt in JSON. The agent
// answers with an Out, as [RunTyped] does, with opts applied. Its events and
// usage reach the calling run as [Agent.AsTool]'s do.
func AgentTool[In, Out any](a *Agent, name, description string, opts ...RunOption) Tool {
	opts = append(slices.Clip(opts), asTool(name, description))
	return agentTool(a, NewTool(name, description, func(ctx context.Context, in In) (Out, error) {
		var zero Out
		ctx, err := deeper(ctx, name)
		if err != nil {
			return zero, err
		}
		prompt, err := json.Marshal(in)
		if err != nil {
			return zero, err
		}
		res, out, err := a.fresh().typed(ctx, promptMessage(string(prompt)), typedOnly(opts), reflect.TypeFor[Out](), nestedEmitter(ctx))
		addAgentUsage(ctx, res.Usage)
		if err != nil {
			return zero, fmt.Errorf("agent %q: %w", name, err)
		}
		return *out.(*Out), nil
	}))
}

// agentTool returns t, the tool of agent a, unusable when a is nil. New
// refuses such a tool, naming it, rather than let its calls fail later.
func agentTool(a *Agent, t Tool) Tool {
	if a == nil && t.err == nil {
		t.err = errors.New("robby: nil *Agent")
	}
	return t
}

// fresh returns an agent over a's configuration and tools with the
// conversation New began.
func (a *Agent) fresh() *Agent { return newAgent(a.core, a.core.initial) }

// asTool marks a run as the agent's run as the tool it names.
func asTool(name, description string) RunOption {
	return func(rc *runConfig) error {
		rc.tool = &toolIdentity{name, description}
		return nil
	}
}

// deeper returns ctx one agent call deeper, or an error past MaxAgentDepth.
func deeper(ctx context.Context, name string) (context.Context, error) {
	depth, _ := ctx.Value(depthKey{}).(int)
	if depth >= MaxAgentDepth {
		return ctx, fmt.Errorf("robby: agent %q not run: agents already call each other %d deep (MaxAgentDepth)", name, depth)
	}
	return context.WithValue(ctx, depthKey{}, depth+1), nil
}

// callKey holds, in a streamed run, the call a tool function runs for.
type callKey struct{}

// nestedEmitter returns the emitter of the run of an agent used as a tool in
// ctx's call. It wraps each event in an [EventAgent] event naming the call.
// It forwards it to the stream of the run that called the tool. It returns
// nil when nobody streams that run.
func nestedEmitter(ctx context.Context) func(Event) bool {
	sink := sinkFrom(ctx)
	call, ok := ctx.Value(callKey{}).(ToolCall)
	if sink == nil || !ok {
		return nil
	}
	return func(e Event) bool {
		return sink.forward(ctx, Event{Kind: EventAgent, ToolCall: &call, Nested: &e})
	}
}

// NotifyAgent passes e on to the streamed run whose tool call ctx is the
// context of, as an event of an agent the call runs: wrapped in an
// [EventAgent] event naming the call, as [Agent.AsTool]'s events are. A
// tool that runs an agent elsewhere, such as a remote one (package
// a2atool), so streams that agent's text ([EventText]) as it comes. It
// waits for room, as [Notify] does, until ctx ends. It reports whether e
// was passed on: it is not when nobody streams the run.
func NotifyAgent(ctx context.Context, e Event) bool {
	emit := nestedEmitter(ctx)
	return emit != nil && emit(e)
}

// agentUsage sums the usage of the agents that a turn's tools ran, which
// may run concurrently.
type agentUsage struct {
	caller *Agent // whose conversation the calls were for
	mu     sync.Mutex
	u      Usage
}

type agentUsageKey struct{}

// addAgentUsage counts u, the usage of an agent run as a tool, in the usage
// of the run whose turn called the tool. It also counts u in that run's
// conversation. There it is stored with the next message saved: the tool's
// result, once the tool returns.
func addAgentUsage(ctx context.Context, u Usage) {
	spent, ok := ctx.Value(agentUsageKey{}).(*agentUsage)
	if !ok {
		return
	}
	spent.mu.Lock()
	spent.u.add(u)
	spent.mu.Unlock()
	a := spent.caller
	a.mu.Lock()
	a.usage.add(u)
	a.unsaved.add(u)
	a.mu.Unlock()
}

func (s *agentUsage) total() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.u
}
