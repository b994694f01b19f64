// Package agui serves a robby agent over AG-UI, the event protocol of
// CopilotKit and of the agent UIs built on @ag-ui/client. It complements
// package openaiserver, which speaks OpenAI's APIs, and package uistream, which
// speaks the Vercel AI SDK's.
//
//	h := agui.New(agent, agui.Options{Tokens: tokens, Store: store})
//	http.Handle("POST /ag-ui", h)
//
// A [Handler] answers a POST of a RunAgentInput ({"threadId", "runId",
// "messages", "tools", ...}), on any path. It answers with server-sent events,
// each an AG-UI event as JSON. Robby's events map one to one:
//
//	run starts            RUN_STARTED
//	text                  TEXT_MESSAGE_START, TEXT_MESSAGE_CONTENT..., TEXT_MESSAGE_END
//	reasoning             REASONING_START, REASONING_MESSAGE_START, _CONTENT..., _END, REASONING_END
//	a call's arguments    TOOL_CALL_START, TOOL_CALL_ARGS...
//	the call, complete    TOOL_CALL_END
//	its result or error   TOOL_CALL_RESULT (the text the model reads)
//	MCP progress, log     CUSTOM "robby.progress", "robby.log"
//	compaction            CUSTOM "robby.compaction"
//	an agent tool's event CUSTOM "robby.agent"
//	a team's handoff      CUSTOM "robby.handoff" ({"from", "to", "reason"})
//	each turn's usage     CUSTOM "robby.usage"
//	run ends              RUN_FINISHED, with usage and outcome
//	run fails             RUN_ERROR
//
// The input's tools are the front end's own. The model may call them beside the
// agent's ([robby.WithCallerTools]). Such a call ends the run (RUN_FINISHED,
// outcome "success" with pendingToolCallIds). The next run carries its result
// as a tool message. A run stopped by the agent's budget or turn limit finishes
// with result {"stopped": "budget"} or {"stopped": "max_turns"}.
//
// # Conversations
//
// Without a store, the conversation is the input's messages, as AG-UI clients
// send them (user, system, developer, assistant with toolCalls, tool). With
// [Options.Store], threadId names a stored conversation of the user the bearer
// token authenticates. The history is the store's. Only what is new in the
// input is read: its last message, the user's new one, or the tool messages
// after the last assistant message, which answer its calls.
//
// A client that goes away cancels the run and its tools. The store keeps the
// messages completed before, then the error record of the cancelled run. It
// never keeps a message in part.
package agui
