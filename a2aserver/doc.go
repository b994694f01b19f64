// Package a2aserver serves a robby agent to other agents over A2A, the
// Agent2Agent protocol (1.0). It is built on the protocol's official Go SDK,
// github.com/a2aproject/a2a-go/v2, whose a2asrv package speaks the wire.
//
//	agent, err := robby.New(robby.WithModel("ai/qwen2.5"), robby.WithName("pricing"), ...)
//	...
//	h := a2aserver.New(agent, a2aserver.Options{
//		Description: "Prices our products.",
//		Tokens:      map[string]string{os.Getenv("ALICE_TOKEN"): "alice"},
//		Store:       store, // sqlitestore or pgstore: contexts outlive the process
//	})
//	defer h.Close()
//	err = http.ListenAndServe("127.0.0.1:8080", h)
//
// A [Handler] serves
//
//	GET  /.well-known/agent-card.json  the agent card, public (and at
//	     /a2a/.well-known/agent-card.json)
//	POST /a2a                          the JSON-RPC binding
//	     /a2a/rest/...                 the HTTP+JSON binding
//
// The card names the agent, its skills (its tools, or one skill named for
// the agent when it has none), the bearer-token security scheme (when
// [Options.Tokens] has tokens), and both interfaces. They are named under [Options.PublicURL], else at the scheme and
// host of the request that read the card.
//
// Every method of the bindings but the card needs one of [Options.Tokens]:
// SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask and
// SubscribeToTask. A message to the agent makes a task, and runs the agent on
// its text (its data parts read as JSON; file parts are refused). The task's
// contextId is a conversation of the token's user: the stored conversation of
// that ID with [Options.Store], else one kept in memory. A second message in
// the same context so continues it. As the run streams, each turn's text is an
// artifact named "answer", appended to as the model writes it. Each tool call
// and result, and each handoff of a team, is a status update (working) whose
// message holds a data part: {"toolCall": {...}}, {"toolResult": {...}} or
// {"handoff": {...}}. The task ends completed, or failed with a message that
// says why, or canceled.
//
// A turn calling a tool of [Options.Approve], or a caller-run tool of
// [Options.CallerTools], puts the task in INPUT_REQUIRED. Its status message
// says what is asked, in words and as a data part: {"approve": [calls],
// "others": [calls]} (the turn's other calls run once it is answered) or
// {"toolCalls": [calls]}, each call {"id", "name", "arguments"}. The
// client's next message on the task answers: "yes" or "no" as its one text
// part, or a data part {"approvals": [{"id", "approved", "reason"}]}; or,
// for caller-run tools, {"toolResults": [{"id", "output", "isError"}]}. The
// run then goes on. An answer not read so asks again, saying why. The
// conversation holds the calls until then, so with a store the task waits
// through a restart, and any replica takes the answer.
//
// A user reads, lists, subscribes to and cancels only their own tasks:
// another's task is not found, as one that does not exist. Cancel ends the
// run's context, so its tools stop too.
//
// With a store that is a [robby.TaskStore] (sqlitestore's, pgstore's), the
// tasks are kept in it, and outlive the process. A running task's record is
// touched every [Options.Heartbeat]. One still submitted or working, run by
// no handler that reads it, and silent for three heartbeats lost its server:
// it reads failed, saying so. A running task is read every [CancelPoll]:
// canceled by another replica, its run stops. Without one, tasks are kept in the handler's
// memory (a2asrv's in-memory store), and end with it.
//
// With [Options.Durable], each task runs durably elsewhere (package temporal's
// TaskRunner: a workflow on Temporal). Its status and artifacts follow the
// run's progress. A task whose replica stopped mid-run is taken over by the
// replica sharing the store that next reads it, and completes there. Cancel
// cancels the run, from any replica.
package a2aserver
