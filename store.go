package robby

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// A Store keeps conversations so that they outlive the process. Each is
// owned by one user (or tenant). Package sqlitestore is the embedded one,
// a single file. Package pgstore keeps them in PostgreSQL, for servers
// that share them between replicas. Package storetest holds the tests
// every Store must pass, to run against your own.
//
// Every method takes the user. A conversation of another user is reported
// as [ErrNoConversation], exactly as one that does not exist. Messages are
// numbered from 1 in their conversation, in the order they were appended.
// They never change once stored.
//
// Each message keeps the usage of the model calls that wrote it
// ([Message.Usage]). Each conversation keeps the sum of its messages'
// ([Conversation.Usage]), updated in the same write. So an implementation
// adds each message's usage to the total in [Store.Append]'s write. A
// fork gets the total of the messages it holds.
//
// A Store is safe for concurrent use, including by several processes
// sharing the same database. Writes to one conversation are ordered by
// [Store.Append]'s expected count.
type Store interface {
	// Create stores a new conversation for c.User, with c.Title,
	// c.Metadata and c.ID, holding msgs (often none). When c.ID is empty,
	// it picks an ID. It is one atomic write. It returns the conversation
	// as stored, with its times, count and usage set. It fails with
	// [ErrConversationExists] when the user has one with that ID already.
	Create(ctx context.Context, c Conversation, msgs ...Message) (Conversation, error)

	// Load returns a conversation and its messages, in order.
	Load(ctx context.Context, user, id string) (Conversation, []Message, error)

	// Append stores msgs at the end of a conversation that holds after
	// messages. It is one atomic write: all of them or none, with their
	// [Message.Usage] added to the conversation's. The store sets their
	// Seq and Created. If the conversation holds another number of
	// messages, nothing is stored and the error wraps [ErrConflict].
	// Someone else appended meanwhile, or a write thought lost had
	// landed: reload and decide.
	Append(ctx context.Context, user, id string, after int64, msgs ...Message) error

	// List returns the user's conversations a page at a time, the most
	// recently updated first. The string it returns is the cursor of the
	// next page, empty after the last.
	List(ctx context.Context, user string, opts ListOptions) ([]Conversation, string, error)

	// SetTitle changes a conversation's title.
	SetTitle(ctx context.Context, user, id, title string) error

	// SetMetadata replaces a conversation's metadata with md.
	SetMetadata(ctx context.Context, user, id string, md map[string]string) error

	// Fork stores a new conversation c, as Create does, holding the first
	// n messages of the user's conversation from, then msgs. It is one
	// atomic write, and the fork's usage is that of the messages it holds.
	// The original is left as it is, and each goes on alone. Robby's
	// stores share those n messages rather than copy them. So a fork costs
	// the same however long the history. A chain of forks, each adding a
	// few messages, stores each message once.
	Fork(ctx context.Context, c Conversation, from string, n int64, msgs ...Message) (Conversation, error)

	// Delete removes a conversation and its messages. Forks of it keep
	// theirs.
	Delete(ctx context.Context, user, id string) error
}

// A Conversation is what a [Store] knows of a conversation besides its
// messages.
type Conversation struct {
	// ID names the conversation among its user's.
	ID string
	// User owns the conversation: a user or tenant ID that the
	// application decides (an authenticated token, an account). It may be
	// empty for a single-user program, which is then its only user.
	User string
	// Title is free text for people, such as the first prompt.
	Title string
	// Metadata is the application's own about the conversation, such as
	// the settings of the run that wrote it. It is nil when empty. The
	// store keeps it as given, as a JSON object.
	Metadata map[string]string
	// Messages counts the messages stored.
	Messages int64
	// Usage sums the [Message.Usage] of the messages stored. That is what
	// the model calls that wrote the conversation used and cost.
	// [Store.Create] starts it at zero.
	Usage Usage
	// Created and Updated are when the conversation was created and last
	// changed, with microsecond precision. A change is a message appended
	// or the title or metadata set.
	Created, Updated time.Time
}

// A Message is one stored message of a conversation.
type Message struct {
	// Seq numbers the message in its conversation, from 1.
	Seq int64
	// Chat is the message as the chat-completions API takes it (a system,
	// user, assistant or tool message), or nil for an error record.
	Chat json.RawMessage
	// Error, for a message without Chat, is the error that ended a run,
	// kept in the history for people to read. The model never sees it.
	Error string
	// Usage is what the model calls made since the previous message was
	// stored used and cost. For an assistant message, that is its turn's
	// call and the summaries compaction wrote before it. It is zero for
	// most others. The store keeps it as given and adds it to
	// [Conversation.Usage] in the same write. So a conversation's usage
	// always counts exactly the messages it holds. The calls of agents
	// its tools ran ([Agent.AsTool]) are not in it, as in [Agent.Usage].
	Usage Usage
	// Agent names the agent that wrote the message, or took it in (a
	// prompt, a tool's result): an agent's [WithName]. In a team's
	// conversation ([WithTeam]) it says which agent holds it. It is
	// empty for a message of an agent without a name, or of another
	// writer.
	Agent string
	// Created is when the message was stored.
	Created time.Time
}

// ListOptions pages [Store.List].
type ListOptions struct {
	// Limit bounds the conversations of a page. 0 or less means 100.
	Limit int
	// Cursor is the string the previous page returned. It is empty for
	// the first page.
	Cursor string
}

// DefaultListLimit is the page size of [Store.List] when
// [ListOptions.Limit] is not set.
const DefaultListLimit = 100

// Errors of a [Store], for errors.Is.
var (
	// ErrNoConversation reports a conversation that does not exist or
	// belongs to another user.
	ErrNoConversation = errors.New("robby: no such conversation")
	// ErrConversationExists reports a [Store.Create] with an ID the user
	// has already.
	ErrConversationExists = errors.New("robby: conversation exists")
	// ErrConflict reports a [Store.Append] whose expected count of
	// messages was wrong: another writer appended first.
	ErrConflict = errors.New("robby: conversation changed meanwhile")
)

// A TaskStore keeps tasks: each a user's record of a run that other programs
// follow and may cancel, such as an A2A task (package a2aserver). The stores
// of packages sqlitestore and pgstore are TaskStores beside their
// conversations, so tasks outlive the process. A task of another user is
// reported as [ErrNoTask], exactly as one that does not exist. A TaskStore is
// safe for concurrent use, including by several processes sharing the same
// database.
type TaskStore interface {
	// CreateTask stores a new task, at version 1, its times set by the store.
	// It fails with [ErrTaskExists] when the user has one with that ID.
	CreateTask(ctx context.Context, t Task) error
	// UpdateTask replaces the task of t.User and t.ID (its context, state and
	// data), expecting it at version, and returns its new version. If it is at
	// another, nothing is stored and the error wraps [ErrConflict].
	UpdateTask(ctx context.Context, t Task, version int64) (int64, error)
	// TouchTask notes that a task's run goes on: it sets its Updated, and
	// leaves its version.
	TouchTask(ctx context.Context, user, id string) error
	// GetTask returns a task.
	GetTask(ctx context.Context, user, id string) (Task, error)
	// ListTasks returns the user's tasks that opts selects, a page at a time,
	// the most recently updated first.
	ListTasks(ctx context.Context, user string, opts TaskListOptions) (TaskPage, error)
}

// A Task is what a [TaskStore] keeps of a task.
type Task struct {
	// ID names the task among its user's; User owns it, as a conversation's.
	ID, User string
	// ContextID names what the task belongs to, such as the conversation
	// its run writes.
	ContextID string
	// State is the task's state as its protocol names it.
	State string
	// Data is the whole task, as its protocol writes it in JSON.
	Data json.RawMessage
	// Version counts the task's updates, from 1.
	Version int64
	// Created and Updated are when the task was created and last updated
	// or touched, with microsecond precision.
	Created, Updated time.Time
}

// TaskListOptions selects and pages [TaskStore.ListTasks]. Its zero value
// selects all of a user's tasks.
type TaskListOptions struct {
	// ContextID and State, when set, select the tasks that have them.
	ContextID, State string
	// UpdatedAfter, when set, selects the tasks updated since.
	UpdatedAfter time.Time
	// Limit bounds the tasks of a page. 0 or less means 100.
	Limit int
	// Cursor is the previous page's [TaskPage.Next], empty for the first.
	Cursor string
}

// A TaskPage is a page of [TaskStore.ListTasks].
type TaskPage struct {
	Tasks []Task
	// Next is the cursor of the next page, empty after the last.
	Next string
	// Total counts the tasks selected, on every page.
	Total int
}

// Errors of a [TaskStore], for errors.Is.
var (
	// ErrNoTask reports a task that does not exist or belongs to another
	// user.
	ErrNoTask = errors.New("robby: no such task")
	// ErrTaskExists reports a [TaskStore.CreateTask] with an ID the user has
	// already.
	ErrTaskExists = errors.New("robby: task exists")
)

// WithConversation binds a run to conversation id of user in store. The run
// starts from the stored conversation, which replaces the agent's own. The
// agent's system prompt and [WithParams] messages come first and are not
// stored.
//
// The run saves every message as it happens, in order: the prompt and the
// results the run starts with, each assistant message with its tool calls,
// each tool result as soon as its tool returns, and the answer. The writes
// go one at a time, in order (saves made while one is written go in the
// next), and the run goes on meanwhile, except where a crash would lose work: a tool that is not [Tool.Idempotent]
// runs only once its call is stored, and the run returns only once all it
// wrote is. So the model reads the prompt while it is being saved. A save
// that fails ends the run at its next save or at its end. The error that ends
// a run is saved as an error record the model never sees.
//
// If the user has no conversation with that ID, it is created, titled with
// the prompt. Each message is stored with the usage of the model calls made
// since the one before it ([Message.Usage]). [Agent.Usage] starts from the
// conversation's total. So it is the conversation's usage, whatever processes
// wrote it.
//
// A run bound to a conversation that a crash interrupted first finishes what
// was left. Each call of the agent's own tools without a result is run again
// if the tool is [Tool.Idempotent]. Otherwise it is answered with an error
// wrapping [ErrInterrupted], which the model reads. Then the run goes on.
// [Agent.Resume] with WithConversation does only that and asks the model for
// what comes next. Calls of tools the agent does not have (caller-run tools)
// are left to [WithToolResults].
//
// Any number of agents and processes may bind runs to the same stored
// conversation, one run at a time. A run that finds the conversation changed
// by another one meanwhile fails with an error wrapping [ErrConflict], having
// saved nothing twice. A run whose save fails stops with the store's error.
func WithConversation(store Store, user, id string) RunOption {
	return func(rc *runConfig) error {
		if store == nil || id == "" {
			return errors.New("robby: WithConversation: a store and a conversation ID are needed")
		}
		rc.journal = &journal{store: store, user: user, id: id}
		return nil
	}
}

// WithStoredConversation is [WithConversation] for a caller that holds
// conversation c of store as stored: c and its messages, as [Store.Load]
// returns them, or as the caller just wrote them ([Store.Fork]). The run
// starts from them without reading the store again. Had the conversation
// changed meanwhile, the run's first save fails with an error wrapping
// [ErrConflict], as with WithConversation. A server that has just stored a
// request's input so saves a read a request. The option is for one run:
// another run with it would start from the same messages, and fail so.
func WithStoredConversation(store Store, c Conversation, msgs []Message) RunOption {
	return func(rc *runConfig) error {
		if store == nil || c.ID == "" || int64(len(msgs)) != c.Messages {
			return errors.New("robby: WithStoredConversation: a store, a conversation ID and its messages are needed")
		}
		rc.journal = &journal{store: store, user: c.User, id: c.ID, held: &held{c, msgs}}
		return nil
	}
}

// held is a stored conversation a journal starts from without loading it.
type held struct {
	c    Conversation
	msgs []Message
}
