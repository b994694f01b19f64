// Package uistream serves a robby agent over the Vercel AI SDK's UI message
// stream protocol. That protocol is the one consumed by `useChat`
// (@ai-sdk/react), the `ai` package's Chat and DefaultChatTransport, and
// assistant-ui. It complements package openaiserver, which speaks OpenAI's
// APIs.
//
//	agent, err := robby.New(robby.WithModel("ai/qwen2.5"), robby.WithTools(...))
//	...
//	h := uistream.New(agent, uistream.Options{
//		Tokens: map[string]string{os.Getenv("ALICE_TOKEN"): "alice"},
//		Store:  store, // to keep each user's chats
//	})
//	err = http.ListenAndServe("127.0.0.1:8080", h)
//
// POST /api/chat (useChat's default path) takes DefaultChatTransport's body
// ({"id", "messages", "trigger", ...}). It answers with server-sent events,
// each a JSON part, ended by "data: [DONE]". The answer has the header
// x-vercel-ai-ui-message-stream: v1. Robby's events map one to one:
//
//	run starts            start (messageId)
//	each turn             start-step ... finish-step
//	text                  text-start, text-delta..., text-end
//	reasoning             reasoning-start, reasoning-delta..., reasoning-end
//	a call's arguments    tool-input-start, tool-input-delta... (dynamic tools)
//	the call, complete    tool-input-available (input parsed; toolMetadata {"destructive": true} for a destructive tool)
//	its result            tool-output-available, or tool-output-error
//	MCP progress, log     data-progress, data-log (transient)
//	compaction            data-compaction (transient)
//	an agent tool's event data-agent (transient)
//	a team's handoff      data-handoff ({"from", "to", "reason"}: the agent answering from there on)
//	run ends              finish, its messageMetadata {"usage", "model", "stopped", "agent"}
//	run fails             error (errorText), then finish ("error")
//
// A run stopped by the agent's budget or turn limit ends with finish "length"
// and messageMetadata.stopped "budget" or "max_turns". A team's run
// ([robby.WithTeam]) names the agent that answered in messageMetadata.agent.
//
// # Conversations
//
// Without a store, the conversation is the client's messages, as useChat sends
// them. That is the text of user and assistant messages, and the agent's tool
// calls with their outputs. With [Options.Store], the chat's id names a stored
// conversation of the user the bearer token authenticates. Only the last
// message, the user's new one, is read. The history is the store's, and the run
// saves each message as it happens ([robby.WithConversation]). A chat runs one
// question at a time: the next waits for a stopped run's last save. The routes
//
//	GET    /api/chats        the user's chats, the most recent first
//	GET    /api/chats/{id}   one chat, its messages as UI messages
//	PATCH  /api/chats/{id}   {"title": "..."} renames it
//	DELETE /api/chats/{id}   deletes it
//
// read and change them; a user never reaches another's chats (404). A team's
// chat shows as it streamed: each handoff a data-handoff part (its note to the
// next agent is no user message), each answer's agent in its metadata.
//
// A client that goes away cancels the run and its tools. The store keeps the
// messages completed before, then the error record of the cancelled run. It
// never keeps a message in part.
package uistream
