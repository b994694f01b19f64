package robby

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/robby-go/robby/internal/trunc"
)

// WithConversation binds a run to conversation id of user in store. The run
// starts from the stored conversation, which replaces the agent's own. The
// agent's system prompt and [WithParams] messages come first and are not
// stored.
//
// The run saves every message as it happens, in order: the prompt and the
// results the run starts with, each assistant message with its tool calls,
// each tool result as soon as its tool returns, and the answer. A write
// starts once the one before it is stored, and the run goes on meanwhile,
// except where a crash would lose work: a tool that is not [Tool.Idempotent]
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

// ErrInterrupted is the error a call's result reports when the run that made
// the call stopped before the tool returned. That happens when the process
// crashed and the tool is not [Tool.Idempotent]. The model reads it.
var ErrInterrupted = errors.New("robby: interrupted: the program stopped before this call returned, and it was not run again")

// saveTimeout bounds each write to the store. The write is made even when the
// run's context has ended.
const saveTimeout = 30 * time.Second

// maxTitle bounds the title a new conversation takes from its prompt.
const maxTitle = 80

// A journal saves a run's messages to its stored conversation. Its methods do
// nothing on a nil journal, which is a run not bound to one.
type journal struct {
	store    Store
	user, id string
	agent    *Agent // whose unsaved usage each save stores, once loaded
	count    int64  // messages stored
	loaded   bool
	err      error // the first failed save; later saves do nothing
	held     *held // the conversation as stored, given: not loaded
	// writing is closed when the write under way ends; nil when none is.
	// The run's goroutine alone starts writes and waits for them: count and
	// err are the write's until then.
	writing chan struct{}
}

// wait waits for the write under way, if any, and returns the error of the
// first save that failed.
func (j *journal) wait() error {
	if j == nil {
		return nil
	}
	if j.writing != nil {
		<-j.writing
		j.writing = nil
	}
	return j.err
}

// load replaces a's conversation with the stored one, creating it if
// needed, then finishes the calls a crash left without a result. A team's
// root opened the journal already: a is then the view of one of its agents.
func (j *journal) load(ctx context.Context, a *Agent, prompt messages, rc *runConfig) error {
	if j == nil {
		return nil
	}
	if !j.loaded {
		if err := j.open(ctx, a, prompt); err != nil {
			return err
		}
	}
	j.agent = a
	return j.finishInterrupted(ctx, a, rc)
}

// open replaces a's conversation with the stored one, creating it if needed.
// The agent that wrote each message is kept for a team's root.
func (j *journal) open(ctx context.Context, a *Agent, prompt messages) error {
	if j == nil {
		return nil
	}
	c, stored, err := j.fetch(ctx, prompt)
	if err != nil {
		return fmt.Errorf("loading conversation %q: %w", j.id, err)
	}
	conv := a.core.initial.clone()
	var tags []string
	if a.core.team != nil {
		tags = make([]string, len(conv.list), len(conv.list)+len(stored))
	}
	for _, m := range stored {
		if m.Chat == nil {
			continue // an error record, for people
		}
		var msg openai.ChatCompletionMessageParamUnion
		if err := msg.UnmarshalJSON(m.Chat); err != nil {
			return fmt.Errorf("conversation %q, message %d: %w", j.id, m.Seq, err)
		}
		conv.add(msg, m.Chat)
		if tags != nil {
			tags = append(tags, m.Agent)
		}
	}
	a.mu.Lock()
	a.conv, a.tags = conv, tags
	a.usage, a.unsaved = c.Usage, Usage{}
	a.mu.Unlock()
	j.count, j.loaded, j.agent = c.Messages, true, a
	return nil
}

// fetch returns the stored conversation: the one held, else loaded, or
// created when there is none.
func (j *journal) fetch(ctx context.Context, prompt messages) (Conversation, []Message, error) {
	if j.held != nil {
		return j.held.c, j.held.msgs, nil
	}
	c, stored, err := j.store.Load(ctx, j.user, j.id)
	if errors.Is(err, ErrNoConversation) {
		c, err = j.store.Create(ctx, Conversation{User: j.user, ID: j.id, Title: titleOf(prompt)})
		if errors.Is(err, ErrConversationExists) { // created meanwhile
			c, stored, err = j.store.Load(ctx, j.user, j.id)
		}
	}
	return c, stored, err
}

// moveTo makes a the agent whose unsaved usage the journal's saves store.
func (j *journal) moveTo(a *Agent) {
	if j != nil {
		j.agent = a
	}
}

// finishInterrupted gives a result to each call of the agent's own tools that
// awaits one. Calls the run's options answer are left alone.
func (j *journal) finishInterrupted(ctx context.Context, a *Agent, rc *runConfig) error {
	ts := a.toolsFor(ctx, nil)
	var results []ToolResult // in the order of the calls
	var again []ToolCall
	var at []int // where the results of again go
	for _, c := range a.awaiting() {
		t := ts.byName[c.Name]
		if t == nil || slices.ContainsFunc(rc.results, func(r ToolResult) bool { return r.Call.ID == c.ID }) {
			continue
		}
		r := ToolResult{Call: c}
		if t.idempotent {
			again, at = append(again, c), append(at, len(results))
		} else {
			r.finish(ErrInterrupted, 0, nil, 0)
		}
		results = append(results, r)
	}
	if len(again) > 0 {
		rerun := make([]ToolResult, len(again))
		a.execute(ctx, ts, again, rerun, nil)
		for i, r := range rerun {
			results[at[i]] = r
		}
	}
	var ms messages
	for _, r := range results {
		ms.add(toolMessage(r))
	}
	if err := j.save(ctx, ms); err != nil {
		return err
	}
	a.addMessages(ms)
	return nil
}

// titleOf returns the start of a prompt, to title a conversation with.
func titleOf(prompt messages) string {
	if len(prompt.list) == 0 || prompt.list[0].OfUser == nil {
		return ""
	}
	title := prompt.list[0].OfUser.Content.OfString.Value
	if len(title) > maxTitle {
		title = trunc.Excerpt(title, maxTitle)
	}
	return title
}

// save appends messages to the stored conversation, each marked as the
// agent's that saves it.
func (j *journal) save(ctx context.Context, ms messages) error {
	return j.saveAs(ctx, ms, nil)
}

// saveAs is save with each message marked as agents says, if not nil.
func (j *journal) saveAs(ctx context.Context, ms messages, agents []string) error {
	if j == nil || len(ms.list) == 0 {
		return nil
	}
	if err := j.wait(); err != nil {
		return err
	}
	raw, err := ms.encoded()
	if err != nil {
		return err
	}
	stored := make([]Message, len(raw))
	for i := range raw {
		stored[i].Chat, stored[i].Agent = raw[i], j.agent.core.name
		if agents != nil {
			stored[i].Agent = agents[i]
		}
	}
	j.start(ctx, stored)
	return nil
}

// start starts storing msgs, the last with the usage of the calls made since
// the last save. The usage goes with the message the calls wrote, in the
// same write. So the stored usage counts exactly the calls of the stored
// messages. The write is made even when the run's context has ended: a run
// stopped midway still keeps what it did.
func (j *journal) start(ctx context.Context, msgs []Message) {
	a := j.agent
	a.mu.Lock()
	u := a.unsaved
	a.unsaved = Usage{}
	a.mu.Unlock()
	msgs[len(msgs)-1].Usage = u
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	j.writing = make(chan struct{})
	go func() {
		defer close(j.writing)
		defer cancel()
		if err := j.store.Append(ctx, j.user, j.id, j.count, msgs...); err != nil {
			a.mu.Lock()
			a.unsaved.add(u)
			a.mu.Unlock()
			j.err = fmt.Errorf("saving to conversation %q: %w", j.id, err)
			return
		}
		j.count += int64(len(msgs))
	}()
}

// saveOne appends one message.
func (j *journal) saveOne(ctx context.Context, m openai.ChatCompletionMessageParamUnion, raw json.RawMessage) error {
	if j == nil {
		return nil
	}
	var ms messages
	ms.add(m, raw)
	return j.save(ctx, ms)
}

// saveResult appends a tool's result; a failure is kept for failed.
func (j *journal) saveResult(ctx context.Context, r ToolResult) {
	if j != nil {
		m, raw := toolMessage(r)
		j.saveOne(ctx, m, raw)
	}
}

// end waits for the run's writes, and keeps the error that ended the run in
// the stored history. It does so even when the run's context has ended. It
// returns the run's error, or else that of a save that failed.
func (j *journal) end(ctx context.Context, runErr error) error {
	if j == nil {
		return runErr
	}
	if err := j.wait(); err != nil || runErr == nil || !j.loaded {
		return cmp.Or(runErr, err)
	}
	j.start(ctx, []Message{{Error: runErr.Error(), Agent: j.agent.core.name}})
	j.wait()
	return runErr
}

// failed returns the error of the first save that failed, of those that
// ended.
func (j *journal) failed() error {
	if j == nil {
		return nil
	}
	if j.writing != nil {
		select {
		case <-j.writing:
		default:
			return nil // under way
		}
	}
	return j.err
}

// ChatCompletion asks the model to answer the conversation, without tools. It
// adds the answer to the conversation and returns it.
func (a *Agent) ChatCompletion(ctx context.Context) (string, error) {
	return a.chat(ctx, nil)
}

// ChatCompletionStream is [Agent.ChatCompletion] with the answer streamed. fn
// gets each piece of text as it arrives. An error from fn stops the stream
// and is returned. On any error, the text received so far is returned with
// it. The conversation is then left as it was.
func (a *Agent) ChatCompletionStream(ctx context.Context, fn func(delta string) error) (string, error) {
	return a.chat(ctx, func(d *delta) error {
		if d.text == "" {
			return nil
		}
		return fn(d.text)
	})
}

func (a *Agent) chat(ctx context.Context, onDelta deltaFunc) (string, error) {
	release, err := a.acquire(ctx)
	if err != nil {
		return "", err
	}
	defer release()
	var r *reply
	var t turn // no tools, no events: the conversation as it is
	req, err := a.turnRequest(&t)
	if err == nil {
		r, err = a.sendFitting(ctx, &t, req, onDelta)
	}
	if err != nil {
		if r != nil {
			return r.text.String(), err
		}
		return "", err
	}
	var ms messages
	ms.add(r.message(nil))
	a.addMessages(ms)
	return r.text.String(), nil
}

// ToolsCompletion offers the tools to the model and returns the calls it asks
// for. It returns none if the model answered with text. The assistant message
// (text and calls) is added to the conversation. Give the calls to
// [Agent.ExecuteToolCalls] to add their results.
func (a *Agent) ToolsCompletion(ctx context.Context) ([]ToolCall, error) {
	release, err := a.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	t := turn{tools: a.toolsFor(ctx, nil)}
	req, err := a.turnRequest(&t)
	if err != nil {
		return nil, err
	}
	r, err := a.sendFitting(ctx, &t, req, nil)
	if err != nil {
		return nil, err
	}
	calls := r.toolCalls()
	var ms messages
	ms.add(r.message(calls))
	a.addMessages(ms)
	return calls, nil
}
