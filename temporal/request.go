package temporal

import (
	"encoding/json"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby"
)

// Names under which the workflow, its activities, signals and query are
// registered and called.
const (
	WorkflowName      = "robby.Run"
	ModelActivityName = "robby.Model"
	ToolActivityName  = "robby.Tool"
	ProgressQuery     = "robby.progress"
	ToolResultsSignal = "robby.tool-results"
	ApprovalSignal    = "robby.approval"
	// DefaultTaskQueue is the task queue workers poll and runs start on
	// unless told otherwise.
	DefaultTaskQueue = "robby"
)

// Defaults of a [Request]'s zero fields.
const (
	DefaultTurnsPerRun      = 25
	DefaultModelTimeout     = 10 * time.Minute
	DefaultHeartbeatTimeout = 10 * time.Second
	DefaultHistoryBytes     = 4 << 20
)

// continueBySize is the change ID (workflow.GetVersion) of continuing as
// new by the history's size.
const continueBySize = "robby.continue-by-size"

// A Request starts a durable run. It says what a call of [robby.Agent.Run] and
// its run options say, in a form the workflow's history can hold. It holds no
// secret: the agent it names is resolved on the worker.
type Request struct {
	// Agent names the agent, as the workers registered it ([Agents]).
	Agent string `json:"agent"`
	// Prompt is added to the conversation as a user message, with the
	// first turn. Empty, the run answers Messages as they are.
	Prompt string `json:"prompt,omitempty"`
	// Messages are the conversation before the prompt, after the agent's
	// own system prompt, which the worker adds.
	Messages []openai.ChatCompletionMessageParamUnion `json:"messages,omitempty"`
	// Agents names, for a team's root ([robby.WithTeam]), the agent of each
	// of Messages, as [robby.Result.Agents] names them. The run goes on with
	// the agent that holds the conversation: give the Messages and Agents of
	// the runs before, and the next one starts with the agent that answered.
	Agents []string `json:"agents,omitempty"`
	// CallerTools are tools the caller runs ([robby.WithCallerTools]):
	// their calls pause the run until [Run.SendToolResults] answers them.
	CallerTools []openai.FunctionDefinitionParam `json:"caller_tools,omitempty"`
	// Approve names the agent's tools whose calls wait for [Run.Approve]
	// before they run; "*" names them all.
	Approve []string `json:"approve,omitempty"`
	// System are system messages for this run only ([robby.WithRunSystem]).
	System []string `json:"system,omitempty"`
	// Params, if set, are request parameters laid over the agent's for this run
	// ([robby.WithRunParams]). They are openai.ChatCompletionNewParams as JSON,
	// without messages or tools.
	Params json.RawMessage `json:"params,omitempty"`
	// Model, if set, replaces the agent's model for this run.
	Model string `json:"model,omitempty"`
	// ResponseFormat, if set, is the request's response_format, as JSON
	// ([RunTyped] sets it).
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	// EndOnCallerTools ends the run, without error, when the model calls
	// caller-run tools. Their calls are in [robby.Result.Pending], as
	// [robby.Agent.Run] does. The run does not wait for their results. It is
	// for a caller that answers them in a run of its own, as an endpoint's
	// client does.
	EndOnCallerTools bool `json:"end_on_caller_tools,omitempty"`
	// TurnsPerRun bounds the turns of one workflow run. The run then continues
	// as new, carrying the conversation, which keeps each history short. 0
	// means [DefaultTurnsPerRun].
	TurnsPerRun int `json:"turns_per_run,omitempty"`
	// HistoryBytes bounds the size of one workflow run's history. After a
	// turn that took it past, the run continues as new; so it does when the
	// server suggests it. 0 means [DefaultHistoryBytes].
	HistoryBytes int `json:"history_bytes,omitempty"`
	// ModelTimeout bounds one model request, retries within it included.
	// 0 means [DefaultModelTimeout].
	ModelTimeout time.Duration `json:"model_timeout,omitempty"`
	// HeartbeatTimeout is how long a silent activity's worker is given
	// before the activity counts as lost. 0 means
	// [DefaultHeartbeatTimeout].
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout,omitempty"`

	// Carried is what the runs before this one did, when the run
	// continued as new; nil when it started.
	Carried *Carried `json:"carried,omitempty"`
}

// Carried is what a workflow run hands the one it continues as.
type Carried struct {
	Result  robby.Result       `json:"result"`  // the run's result so far
	Spent   robby.Budget       `json:"spent"`   // what it spent, for the budget
	Results []robby.ToolResult `json:"results"` // the results the next turn gives the model
	Events  []robby.Event      `json:"events"`  // the progress so far
}

// Progress is what a run did so far, as [Run.Progress] returns it.
type Progress struct {
	// Events are the run's steps so far: each turn's answer text (as one
	// EventText), tool calls, tool results and turn ends.
	Events []robby.Event `json:"events"`
	// Turns counts the model requests made.
	Turns int `json:"turns"`
	// Usage sums the turns' usage.
	Usage robby.Usage `json:"usage"`
	// Agent names, for a team's root, the agent that holds the
	// conversation: that of the last turn, or the one it handed over to.
	// Events has an EventHandoff for each handoff.
	Agent string `json:"agent,omitempty"`
	// AwaitingResults are the calls of caller-run tools the run waits
	// for ([Run.SendToolResults]).
	AwaitingResults []robby.ToolCall `json:"awaiting_results,omitempty"`
	// AwaitingApproval are the calls that wait for [Run.Approve]. Each
	// one's EventToolCall in Events says whether its tool is destructive
	// ([robby.Event.Destructive]), for the person who approves it.
	AwaitingApproval []robby.ToolCall `json:"awaiting_approval,omitempty"`
}

// An Approval answers a call that waits for one ([Request.Approve]).
type Approval struct {
	CallID   string `json:"call_id"`
	Approved bool   `json:"approved"`
	Reason   string `json:"reason,omitempty"` // why not, which the model reads
}

// turnInput is the model activity's input: one turn of the agent.
type turnInput struct {
	Agent          string                                   `json:"agent"`
	Prompt         string                                   `json:"prompt,omitempty"`
	Messages       []openai.ChatCompletionMessageParamUnion `json:"messages,omitempty"`
	Agents         []string                                 `json:"agents,omitempty"` // a team's: of each message
	Results        []robby.ToolResult                       `json:"results,omitempty"`
	CallerTools    []openai.FunctionDefinitionParam         `json:"caller_tools,omitempty"`
	System         []string                                 `json:"system,omitempty"`
	Params         json.RawMessage                          `json:"params,omitempty"`
	Model          string                                   `json:"model,omitempty"`
	ResponseFormat json.RawMessage                          `json:"response_format,omitempty"`
	Done           int                                      `json:"done"`
	Spent          robby.Budget                             `json:"spent"`
}

// turnOutput is what a turn did, the agent's limits, and which tools
// may run again.
type turnOutput struct {
	Result     robby.Result    `json:"result"`
	Err        string          `json:"err,omitempty"`
	ErrKind    string          `json:"err_kind,omitempty"` // errMaxTurns or errBudget
	Limits     robby.Limits    `json:"limits"`
	Idempotent map[string]bool `json:"idempotent,omitempty"` // by tool name, for the calls pending
	// Destructive marks, by tool name, the tools said destructive
	// ([robby.Tool.Destructive]), for the calls' events.
	Destructive map[string]bool `json:"destructive,omitempty"`
}

// toolInput is the tool activity's input: one call.
type toolInput struct {
	Agent string `json:"agent"`
	// Member names the agent of the team Agent leads that made the call.
	Member string         `json:"member,omitempty"`
	Call   robby.ToolCall `json:"call"`
	Turn   int            `json:"turn"`
}

// Error types of the workflow's errors that carry the partial result.
const (
	errMaxTurns = "robby.MaxTurns"
	errBudget   = "robby.Budget"
)
