// Package temporal runs robby agents durably, on Temporal
// (go.temporal.io/sdk): a run survives the process that started it, a
// deploy, a crash or a scale-down, and a person may take days to answer.
//
// The ReAct loop is a workflow ([Workflow]); the world is activities: each
// model request is one, each tool call (local or MCP) another, with the
// tool timeout. A completed activity is in the workflow's history, so a run
// whose worker died goes on on another worker without asking the model
// again what it already answered, nor running again a tool that returned.
//
// The agent is not in the history: workers resolve it by name
// ([Register]), with its model, endpoint, keys, tools and MCP servers. The
// history holds the conversation, the tool calls and their results.
//
// The turn limit, the per-turn tool-call limit, the budget, fallback and
// compaction keep their meaning: each model activity is one turn of the
// agent ([robby.WithOneTurn]), told the turns taken and the spending so
// far. Model requests, and the calls of tools marked [robby.Tool.Idempotent],
// are retried with backoff when their activity fails (a worker crash, a
// timeout); a call of any other tool is run at most once: if its worker
// dies, the model reads that the call was interrupted ([robby.ErrInterrupted]).
//
// Calls of caller-run tools ([Request.CallerTools]) and calls that need an
// approval ([Request.Approve]) pause the run until a signal brings the
// answer ([Run.SendToolResults], [Run.Approve]); a query returns the run's
// progress ([Run.Progress]). Long runs continue as new, carrying the
// conversation. See docs/DURABLE.md.
package temporal
