package temporal

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/robby-go/robby"
)

// Agents are the agents a worker serves, by the names requests give. Each
// activity runs on a clone of one, begun afresh ([robby.Agent.Reset]), so
// an agent may serve any number of runs at once. The worker resolves them:
// their keys, endpoints and MCP servers never enter a workflow's history.
type Agents map[string]*robby.Agent

// A Registry is where [Register] registers the workflow and its
// activities: a worker.Worker, or a testsuite environment.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Options change what [Register] registers.
type Options struct {
	// Events, if set, gets every event of the runs on this worker as it
	// happens. Events are the model's text, reasoning and tool-call deltas,
	// each tool call and its result, and the end of each turn. It is called
	// from the activities, outside the workflow, so streaming cannot make it
	// non-deterministic. It must not block. A replayed or retried activity may
	// repeat events of a turn.
	Events func(workflowID string, e robby.Event)
}

// Register registers [Workflow] and the model and tool activities, over
// agents, with r. The agents are not closed by the worker: close them
// after it stopped.
func Register(r Registry, agents Agents, opts Options) {
	r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	a := &activities{agents: agents, events: opts.Events}
	r.RegisterActivityWithOptions(a.Model, activity.RegisterOptions{Name: ModelActivityName})
	r.RegisterActivityWithOptions(a.Tool, activity.RegisterOptions{Name: ToolActivityName})
}

// RegisterWorkflow registers [Workflow] alone, under its name: with a
// worker.WorkflowReplayer, to replay recorded histories.
func RegisterWorkflow(r interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}) {
	r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
}
