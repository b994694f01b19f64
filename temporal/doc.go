// Package temporal runs robby agents durably, on Temporal (go.temporal.io/sdk).
// A run survives the process that started it, a deploy, a crash or a
// scale-down. A person may take days to answer.
//
// The ReAct loop is a workflow ([Workflow]), and the world is activities. Each
// model request is one activity, each tool call (local or MCP) another, with
// the tool timeout. A completed activity is in the workflow's history. A run
// whose worker died so goes on on another worker. It does not ask the model
// again what it already answered, nor run again a tool that returned.
//
// The agent is not in the history: workers resolve it by name ([Register]),
// with its model, endpoint, keys, tools and MCP servers. The history holds the
// conversation, the tool calls and their results.
//
// The turn limit, the per-turn tool-call limit, the budget, fallback and
// compaction keep their meaning. Each model activity is one turn of the agent
// ([robby.WithOneTurn]), told the turns taken and the spending so far. Model
// requests are retried with backoff when their activity fails (a worker crash,
// a timeout). So are the calls of tools marked [robby.Tool.Idempotent], such
// as an MCP tool annotated readOnlyHint or idempotentHint. A call of any
// other tool runs at most once. If its worker dies, the model reads that the
// call was interrupted ([robby.ErrInterrupted]).
//
// Calls of caller-run tools ([Request.CallerTools]) pause the run until a
// signal brings the answer ([Run.SendToolResults]). So do calls that need an
// approval ([Request.Approve], [Run.Approve]). A query returns the run's
// progress ([Run.Progress]). Long runs continue as new, carrying the
// conversation. See docs/DURABLE.md.
package temporal
