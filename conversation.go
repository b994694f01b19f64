package robby

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/robby-go/robby/internal/chatwire"
	"github.com/robby-go/robby/internal/trunc"
)

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
	loaded   bool
	held     *held // the conversation as stored, given: not loaded

	// The run's goroutine starts saves; one goroutine at a time writes
	// them, in order. A save started while one is written waits in queued,
	// and goes in the next write: the run need not wait for the store.
	mu      sync.Mutex
	count   int64         // messages stored
	err     error         // the first failed save; later saves do nothing
	writing chan struct{} // closed once the writes under way end; nil when none
	queued  []pendingSave
}

// A pendingSave is the messages of one save, the last with the usage of
// agent's calls since the save before.
type pendingSave struct {
	msgs  []Message
	agent *Agent
	usage Usage
}

// wait waits for the writes under way, if any, and returns the error of the
// first save that failed.
func (j *journal) wait() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	w := j.writing
	j.mu.Unlock()
	if w != nil {
		<-w
	}
	return j.failed()
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
		msg, err := chatwire.DecodeMessage(m.Chat)
		if err != nil {
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
	if err := j.failed(); err != nil {
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
	p := pendingSave{msgs, a, u}
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.err != nil:
		p.giveBack()
	case j.writing != nil:
		j.queued = append(j.queued, p)
	default:
		j.writing = make(chan struct{})
		go j.write(context.WithoutCancel(ctx), []pendingSave{p})
	}
}

// write appends the messages of saves, then those of the saves queued
// meanwhile, until none is left or one fails. A failed write's usage goes
// back to its agents, unsaved, as does that of the saves queued after it.
func (j *journal) write(ctx context.Context, saves []pendingSave) {
	for len(saves) > 0 {
		var msgs []Message
		for _, p := range saves {
			msgs = append(msgs, p.msgs...)
		}
		wctx, cancel := context.WithTimeout(ctx, saveTimeout)
		err := j.store.Append(wctx, j.user, j.id, j.count, msgs...) // count is this goroutine's until it ends
		cancel()
		j.mu.Lock()
		if err != nil {
			j.err = fmt.Errorf("saving to conversation %q: %w", j.id, err)
			for _, p := range append(saves, j.queued...) {
				p.giveBack()
			}
			j.queued = nil
		} else {
			j.count += int64(len(msgs))
		}
		saves, j.queued = j.queued, nil
		if len(saves) == 0 {
			close(j.writing)
			j.writing = nil
		}
		j.mu.Unlock()
	}
}

// giveBack returns the save's usage to its agent, unsaved.
func (p pendingSave) giveBack() {
	p.agent.mu.Lock()
	p.agent.unsaved.add(p.usage)
	p.agent.mu.Unlock()
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
	j.mu.Lock()
	defer j.mu.Unlock()
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
