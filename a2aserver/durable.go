package a2aserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/chatwire"
	"github.com/robby-go/robby/internal/trunc"
)

// A DurableRunner runs tasks durably, elsewhere than in the handler's
// process ([Options.Durable]): package temporal's TaskRunner runs each as a
// workflow on Temporal. Any process may follow, wait for and cancel any
// run. Its methods may be called concurrently.
type DurableRunner interface {
	// Start starts job's run. Starting a job whose ID runs already
	// attaches to that run.
	Start(ctx context.Context, job DurableJob) error
	// Progress returns what the run did so far, and the calls that wait
	// for an approval.
	Progress(ctx context.Context, id string) (DurableProgress, error)
	// Approve answers a call that waits for an approval. A refused call
	// is not run: the model reads the reason.
	Approve(ctx context.Context, id, callID string, approved bool, reason string) error
	// SendToolResults answers the calls of caller-run tools the run waits
	// for, with the results the client gave.
	SendToolResults(ctx context.Context, id string, results []robby.ToolResult) error
	// Wait waits for the run to end and returns its result: the messages
	// it added. A run cancelled (from any process) returns an error
	// wrapping [context.Canceled].
	Wait(ctx context.Context, id string) (*robby.Result, error)
	// Cancel stops the run, from any process.
	Cancel(ctx context.Context, id string) error
}

// A DurableJob is a task's run, for a [DurableRunner]: everything it needs
// but the agent, which the runner resolves.
type DurableJob struct {
	// ID names the run: "a2a-" and the task's ID.
	ID string
	// Messages are the conversation, the message to the agent last, after
	// the agent's own system prompt.
	Messages []openai.ChatCompletionMessageParamUnion
	// Approve names the agent's tools whose calls wait for an approval
	// ([Options.Approve]); "*" names them all.
	Approve []string
	// CallerTools are the tools the client runs ([Options.CallerTools]):
	// their calls wait for [DurableRunner.SendToolResults].
	CallerTools []openai.FunctionDefinitionParam
	// Agents names, for a team's root ([robby.WithTeam]), the agent of each
	// of Messages, as the store keeps them ([robby.Message.Agent]): the run
	// goes on with the agent that holds the conversation. It is nil when no
	// message names one.
	Agents []string
}

// DurableProgress is what a durable run did so far.
type DurableProgress struct {
	// Events are the run's events, in order: each turn's text (one
	// EventText), each tool call and result, each turn's end.
	Events []robby.Event
	// AwaitingApproval are the calls that wait for Approve.
	AwaitingApproval []robby.ToolCall
	// AwaitingResults are the calls of caller-run tools that wait for
	// SendToolResults.
	AwaitingResults []robby.ToolCall
}

// waiting is what the run waits for from the client, less the calls
// answered already: the run may not have read those answers yet. It is
// nil when it waits for nothing.
func (p DurableProgress) waiting(answered []wireCall) *ask {
	if calls := unanswered(p.AwaitingResults, answered); len(calls) > 0 {
		return &ask{ToolCalls: wireCalls(calls)}
	}
	if calls := unanswered(p.AwaitingApproval, answered); len(calls) > 0 {
		return &ask{Approve: wireCalls(calls)}
	}
	return nil
}

// The keys of the task's metadata that name its durable run, and count its
// conversation's messages before the run's. Plain values: a2asrv copies
// metadata with encoding/gob.
const (
	durableRunKey   = "robby.durableRun"
	durableAfterKey = "robby.durableAfter"
	durableToldKey  = "robby.durableTold" // the run's events told when the task asked
)

// pollEvery is how often a durable run's progress is read, to tell it.
const pollEvery = 200 * time.Millisecond

// durableRun is what a durable task's metadata says of its run.
type durableRun struct {
	Run   string
	After int64 // the conversation's messages before the run's
}

// submitted is the task a message makes. A durable one names its run from
// the start, so that a cancel finds it however soon it comes.
func (x *executor) submitted(ec *a2asrv.ExecutorContext) *a2a.Task {
	task := a2a.NewSubmittedTask(ec, ec.Message)
	if x.durable != nil {
		task.Metadata = map[string]any{durableRunKey: "a2a-" + string(ec.TaskID)}
	}
	return task
}

// durableOf reads a task's durable run, if it has one. started reports
// whether the run was about to start: its conversation's count is known.
func durableOf(task *a2a.Task) (d durableRun, started bool) {
	d.Run, _ = task.Metadata[durableRunKey].(string)
	switch n := task.Metadata[durableAfterKey].(type) {
	case float64: // as stored, in JSON
		d.After, started = int64(n), true
	case int64:
		d.After, started = n, true
	}
	return d, started && d.Run != ""
}

// runDurable starts the task's run on the DurableRunner, or answers the
// approvals it waits for, and tells its progress until it ends or waits
// for the client again. Closing the handler leaves the run going: a
// replica reading the task then takes it over (adopt).
func (x *executor) runDurable(ctx context.Context, ec *a2asrv.ExecutorContext, in input, yield func(a2a.Event, error) bool) {
	user := ec.User.Name
	s := &taskStream{ec: ec, yield: yield, keyed: true}
	var d durableRun
	var ok bool
	var answered []wireCall
	if in.ask != nil {
		s.seq, answered = told(ec.StoredTask), append(slices.Clone(in.ask.Approve), in.ask.ToolCalls...)
		d, ok = x.answerDurable(ctx, ec, in, yield)
	} else {
		d, ok = x.startDurable(ctx, ec, in.prompt, yield)
	}
	if !ok {
		return
	}
	var waits *ask
	res, err := x.follow(ctx, d, func(p DurableProgress) bool {
		for ; s.seq < len(p.Events); s.seq++ {
			if !s.event(p.Events[s.seq]) {
				return false
			}
		}
		waits = p.waiting(answered)
		return waits == nil
	})
	switch {
	case ctx.Err() != nil && x.base.Err() == nil:
		// Cancelled, here or on another replica: Cancel cancels the run
		// too, unless it read the task before it named its run.
		if err := x.durable.Cancel(context.WithoutCancel(ctx), d.Run); err != nil {
			x.log.WarnContext(ctx, "robby: a durable A2A task's run not cancelled", slog.String("task", string(ec.TaskID)), slog.Any("error", err))
		}
		if errors.Is(context.Cause(ctx), errCanceledElsewhere) {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil) // told to this replica's clients
		}
		return
	case ctx.Err() != nil:
		// Closed: a2asrv ends the execution on an error, which the store
		// refuses to record (storedTasks.Update): the task stays working,
		// for another replica to take over.
		yield(nil, errLeft)
		return
	case errors.Is(err, errStopped) && waits != nil:
		yield(asking(ec, waits, s.seq), nil)
		return
	case errors.Is(err, errStopped):
		return // its client gone
	}
	yield(x.ended(ctx, ec, d, user, res, err), nil)
}

// answerDurable sends the client's answer to what the task's run waits
// for: approvals, or the results of caller-run tools. ok is false if it
// could not: the task failed then.
func (x *executor) answerDurable(ctx context.Context, ec *a2asrv.ExecutorContext, in input, yield func(a2a.Event, error) bool) (d durableRun, ok bool) {
	d, _ = durableOf(ec.StoredTask)
	err := x.sendApprovals(ctx, d.Run, in.ask.Approve, in.refused)
	if err == nil && len(in.ask.ToolCalls) > 0 {
		err = x.durable.SendToolResults(ctx, d.Run, in.results)
	}
	if err != nil {
		yield(failed(ec, x.failure(ctx, ec, err)), nil)
		return d, false
	}
	return d, yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil)
}

// startDurable adds the prompt to the task's conversation and starts its
// run. ok is false if it did not start: the task failed then.
func (x *executor) startDurable(ctx context.Context, ec *a2asrv.ExecutorContext, prompt string, yield func(a2a.Event, error) bool) (d durableRun, ok bool) {
	x.supersede(ctx, ec)
	msgs, agents, after, err := x.durableInput(ctx, ec.User.Name, ec.ContextID, prompt)
	if err != nil {
		yield(failed(ec, x.failure(ctx, ec, err)), nil)
		return d, false
	}
	d = durableRun{Run: "a2a-" + string(ec.TaskID), After: after}
	working := a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil)
	working.Metadata = map[string]any{durableAfterKey: d.After}
	if !yield(working, nil) {
		return d, false
	}
	job := DurableJob{ID: d.Run, Messages: msgs, Approve: x.approve, CallerTools: x.callerTools, Agents: agents}
	if err := x.durable.Start(ctx, job); err != nil {
		yield(failed(ec, x.failure(ctx, ec, err)), nil)
		return d, false
	}
	return d, true
}

// superseded is the status message of a task that waited for the client
// when a new message came in its context instead of the answer.
const superseded = "Cancelled: a new message came in this task's context instead of the answer it waited for."

// supersede ends the durable tasks of the context that wait for the
// client: a new message came instead of their answer. Their runs are
// cancelled, and each reads CANCELED, saying why. Else each run's workflow
// would wait for an answer until cancelled. A task another replica ended
// meanwhile is left as it is. With tasks in memory there are none to find.
func (x *executor) supersede(ctx context.Context, ec *a2asrv.ExecutorContext) {
	if x.tasks == nil {
		return
	}
	user := ec.User.Name
	opts := robby.TaskListOptions{ContextID: ec.ContextID, State: string(a2a.TaskStateInputRequired)}
	for {
		page, err := x.tasks.ListTasks(ctx, user, opts)
		if err != nil {
			x.log.WarnContext(ctx, "robby: the A2A tasks waiting in a context not read", slog.String("context", ec.ContextID), slog.Any("error", err))
			return
		}
		for _, t := range page.Tasks {
			x.cancelWaiting(ctx, user, t)
		}
		if opts.Cursor = page.Next; opts.Cursor == "" {
			return
		}
	}
}

// cancelWaiting cancels the run of a durable task waiting for the client,
// and records the task cancelled.
func (x *executor) cancelWaiting(ctx context.Context, user string, t robby.Task) {
	var task a2a.Task
	if err := json.Unmarshal(t.Data, &task); err != nil {
		return
	}
	d, ok := durableOf(&task)
	if !ok {
		return
	}
	if err := x.durable.Cancel(context.WithoutCancel(ctx), d.Run); err != nil {
		x.log.WarnContext(ctx, "robby: a superseded durable A2A task's run not cancelled", slog.String("task", t.ID), slog.Any("error", err))
	}
	ec := &a2asrv.ExecutorContext{TaskID: task.ID, ContextID: task.ContextID}
	end := a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(superseded)))
	w := &taskWriter{ts: x.tasks, user: user, id: t.ID, every: x.heartbeat}
	if err := w.write(context.WithoutCancel(ctx), ec, nil, end); err != nil {
		x.log.WarnContext(ctx, "robby: a superseded durable A2A task not recorded cancelled", slog.String("task", t.ID), slog.Any("error", err))
	}
}

// errLeft ends the execution of a durable task whose handler closed: its
// run goes on elsewhere, and its task is left as it is, for another
// replica to take over.
var errLeft = errors.New("a2aserver: the handler closed: the durable run is left to another replica")

// errStopped ends follow when its caller stopped listening.
var errStopped = errors.New("a2aserver: no one listens to the run anymore")

// follow tells the run's progress to tell until it ends, and returns its
// result. It returns early if tell returns false or ctx ends.
func (x *executor) follow(ctx context.Context, d durableRun, tell func(DurableProgress) bool) (*robby.Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type ending struct {
		res *robby.Result
		err error
	}
	done := make(chan ending, 1)
	go func() {
		res, err := x.durable.Wait(ctx, d.Run)
		done <- ending{res, err}
	}()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e := <-done:
			if p, err := x.durable.Progress(ctx, d.Run); err == nil {
				tell(p)
			}
			return e.res, e.err
		case <-t.C:
			if p, err := x.durable.Progress(ctx, d.Run); err == nil && !tell(p) {
				return nil, errStopped
			}
		}
	}
}

// ended saves the messages a durable run added, and returns how its task
// ends.
func (x *executor) ended(ctx context.Context, ec *a2asrv.ExecutorContext, d durableRun, user string, res *robby.Result, err error) *a2a.TaskStatusUpdateEvent {
	if res != nil {
		if serr := x.saveDurable(context.WithoutCancel(ctx), user, ec.ContextID, d.After, res); serr != nil && err == nil {
			err = serr
		}
	}
	switch {
	case err == nil:
		return a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil)
	case errors.Is(err, context.Canceled):
		return a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil)
	default:
		return failed(ec, x.failure(ctx, ec, err))
	}
}

// durableInput adds the prompt to the context's conversation, and returns
// the conversation, the agent of each of its messages (nil when none names
// one: DurableJob.Agents) and the count of its stored messages.
func (x *executor) durableInput(ctx context.Context, user, contextID, prompt string) (msgs []openai.ChatCompletionMessageParamUnion, agents []string, n int64, err error) {
	input := openai.UserMessage(prompt)
	if x.store == nil { // the conversation without the agent's system prompt, which the run adds
		conv, ok := x.mem.get(user + "\x00" + contextID)
		if !ok {
			conv = x.agent.Clone()
			conv.SetMessages(nil)
		}
		conv.AddMessages(input)
		x.mem.put(user+"\x00"+contextID, conv)
		msgs = conv.Messages()
		return msgs, nil, int64(len(msgs)), nil
	}
	raw, err := input.MarshalJSON()
	if err != nil {
		return nil, nil, 0, err
	}
	c, stored, err := x.store.Load(ctx, user, contextID)
	switch {
	case errors.Is(err, robby.ErrNoConversation):
		c, err = x.store.Create(ctx, robby.Conversation{ID: contextID, User: user, Title: trunc.Cut(prompt, 80)}, robby.Message{Chat: raw})
	case err == nil:
		err = x.store.Append(ctx, user, contextID, c.Messages, robby.Message{Chat: raw})
		c.Messages++
	}
	if err != nil {
		return nil, nil, 0, err
	}
	msgs = make([]openai.ChatCompletionMessageParamUnion, 0, len(stored)+1)
	named := false
	for _, m := range stored {
		if m.Chat == nil {
			continue // an error record, for people
		}
		msg, err := chatwire.DecodeMessage(m.Chat)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("conversation %q, message %d: %w", contextID, m.Seq, err)
		}
		msgs, agents, named = append(msgs, msg), append(agents, m.Agent), named || m.Agent != ""
	}
	if !named {
		agents = nil
	}
	return append(msgs, input), agents, c.Messages, nil
}

// saveDurable appends the messages a durable run added to its
// conversation, each with its agent if the run names them, once: replicas
// that each followed the run find them written by the first.
func (x *executor) saveDurable(ctx context.Context, user, contextID string, after int64, res *robby.Result) error {
	added := res.Messages
	if x.store == nil {
		key := user + "\x00" + contextID
		if conv, ok := x.mem.get(key); ok && int64(len(conv.Messages())) == after {
			conv.AddMessages(added...)
			x.mem.put(key, conv)
		}
		return nil
	}
	msgs := make([]robby.Message, 0, len(added))
	for i, m := range added {
		raw, err := m.MarshalJSON()
		if err != nil {
			return err
		}
		msgs = append(msgs, robby.Message{Chat: raw})
		if i < len(res.Agents) {
			msgs[i].Agent = res.Agents[i] // a team's
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	err := x.store.Append(ctx, user, contextID, after, msgs...)
	if !errors.Is(err, robby.ErrConflict) {
		return err
	}
	c, _, lerr := x.store.Load(ctx, user, contextID)
	if lerr == nil && c.Messages == after+int64(len(msgs)) {
		return nil // saved by another replica
	}
	return err
}
