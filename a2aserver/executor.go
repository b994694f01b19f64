package a2aserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/httpapi"
)

// executor runs the agent for a2asrv: each message to the agent is a run in
// the conversation its contextId names, its events told as A2A events.
type executor struct {
	agent *robby.Agent
	store robby.Store // nil: mem keeps the conversations
	mem   *memory
	tasks robby.TaskStore // nil: a2asrv keeps the tasks in memory
	// approve names the tools whose calls wait for the client's approval.
	approve []string
	// callerTools are the tools the client runs.
	callerTools []openai.FunctionDefinitionParam
	running     *running
	durable     DurableRunner // nil: runs go on here
	heartbeat   time.Duration
	log         *slog.Logger
	base        context.Context // ended by Handler.Close
}

// errNotText refuses the parts a run cannot read.
var errNotText = errors.New("only text and data parts are read: send a file's content as text")

// Execute implements [a2asrv.AgentExecutor].
func (x *executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if !httpapi.ValidID(ec.ContextID) {
			yield(nil, fmt.Errorf("contextId %q: 1 to 128 letters, digits, '-' or '_': %w", ec.ContextID, a2a.ErrInvalidParams))
			return
		}
		if ec.StoredTask == nil && !yield(x.submitted(ec), nil) {
			return
		}
		in, ok := x.input(ec, yield)
		if !ok || x.durable == nil && !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		defer context.AfterFunc(x.base, func() { cancel(nil) })()
		x.running.add(ec.User.Name, string(ec.TaskID))
		defer x.running.remove(ec.User.Name, string(ec.TaskID))
		if x.tasks != nil {
			go x.tend(ctx, cancel, ec)
		}
		if x.durable != nil {
			x.runDurable(ctx, ec, in, yield)
			return
		}
		s := &taskStream{ec: ec, yield: yield}
		if in.ask != nil && len(in.ask.Approve) > 0 {
			if in.results, ok = x.runAnswered(ctx, in.ask, in.refused, s); !ok {
				return
			}
		}
		x.run(ctx, s, in, yield)
	}
}

// An input is what a message gives a run: a prompt, or the answer to what
// its task asked.
type input struct {
	prompt  string
	ask     *ask              // what the task asked, if the message answers it
	refused map[string]string // the calls refused, by ID, and why
	results []robby.ToolResult
}

// input reads the message: a prompt, or the answer to what the task waits
// for. A message it cannot read ends the execution with the task failed, or
// asking again: ok is false then.
func (x *executor) input(ec *a2asrv.ExecutorContext, yield func(a2a.Event, error) bool) (in input, ok bool) {
	if t := ec.StoredTask; t != nil && t.Status.State == a2a.TaskStateInputRequired {
		a, err := askOfTask(t)
		if err != nil {
			yield(failed(ec, err.Error()), nil)
			return in, false
		}
		in.ask = a
		in.refused, in.results, err = answerOf(ec.Message, a)
		if err != nil {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, askMessage(ec, a, err.Error())), nil)
			return in, false
		}
		return in, true
	}
	prompt, err := promptOf(ec.Message)
	if err != nil {
		yield(failed(ec, err.Error()), nil)
		return in, false
	}
	in.prompt = prompt
	return in, true
}

// run runs the agent on the input and tells its events, then how it ended:
// completed, failed, or waiting for the client's input. With approvals it
// runs one turn at a time, to pause before the calls that need one.
func (x *executor) run(ctx context.Context, s *taskStream, in input, yield func(a2a.Event, error) bool) {
	ec := s.ec
	conv, opts, save := x.conversation(ec)
	defer save()
	var done int
	var spent robby.Budget
	if in.prompt != "" && len(x.approve) > 0 {
		in.results = x.refuseWaiting(ctx, ec, conv)
	}
	for {
		o := append(slices.Clone(opts), robby.WithCallerTools(x.callerTools...), robby.WithToolResults(in.results...))
		if len(x.approve) > 0 {
			o = append(o, robby.WithOneTurn(done, spent))
		}
		var seq iter.Seq2[robby.Event, error]
		if in.prompt != "" {
			seq = conv.Stream(ctx, in.prompt, o...)
		} else {
			seq = conv.ResumeStream(ctx, o...)
		}
		res, runErr, ok := x.tell(ctx, s, seq)
		if !ok {
			return
		}
		if runErr != nil || ctx.Err() != nil || len(res.Pending) == 0 {
			x.end(ctx, ec, runErr, yield)
			return
		}
		for _, c := range res.Pending {
			if !s.call(c) {
				return
			}
		}
		if a := x.askOf(res.Pending); a != nil {
			a.Agent = res.Agent
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, askMessage(ec, a, "")), nil)
			return
		}
		done, spent = done+res.Turns, spentBy(spent, res)
		in = input{}
		if in.results, ok = x.runAnswered(ctx, &ask{Others: wireCalls(res.Pending), Agent: res.Agent}, nil, s); !ok {
			return
		}
	}
}

// spentBy adds what a run spent to spent.
func spentBy(spent robby.Budget, res *robby.Result) robby.Budget {
	spent.ModelCalls += res.Turns
	spent.Tokens += max(res.Usage.TotalTokens, res.Usage.PromptTokens+res.Usage.CompletionTokens)
	spent.Cost += res.Usage.Cost
	return spent
}

// conversation is the agent in the task's conversation, the options that
// bind a run to it, and what saves it once the runs are done.
func (x *executor) conversation(ec *a2asrv.ExecutorContext) (*robby.Agent, []robby.RunOption, func()) {
	user := ec.User.Name
	conv := x.agent.Clone()
	if x.store != nil {
		return conv, []robby.RunOption{robby.WithConversation(x.store, user, ec.ContextID)}, func() {}
	}
	key := user + "\x00" + ec.ContextID
	if prev, ok := x.mem.get(key); ok {
		conv = prev
	} else {
		conv.Reset()
	}
	return conv, nil, func() { x.mem.put(key, conv) }
}

// tell tells a run's events and returns its result and error. ok is false
// once the client is gone.
func (x *executor) tell(ctx context.Context, s *taskStream, seq iter.Seq2[robby.Event, error]) (res *robby.Result, runErr error, ok bool) {
	for e, err := range seq {
		if e.Kind == robby.EventDone {
			res = e.Result
		}
		if err != nil {
			runErr = err
			break
		}
		if !s.event(e) {
			return nil, nil, false
		}
	}
	if ctx.Err() == nil || x.base.Err() != nil {
		if !s.endTurn() {
			return nil, nil, false
		}
	}
	return res, runErr, true
}

// end tells how a run ended.
func (x *executor) end(ctx context.Context, ec *a2asrv.ExecutorContext, runErr error, yield func(a2a.Event, error) bool) {
	switch {
	case runErr == nil:
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	case errors.Is(context.Cause(ctx), errCanceledElsewhere):
		// Told so to this replica's clients; a2asrv keeps the stored cancel.
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	case x.base.Err() != nil:
		yield(failed(ec, "The server stopped during the run."), nil)
	case ctx.Err() != nil:
		// Canceled: a2asrv records it, through Cancel.
	default:
		yield(failed(ec, x.failure(ctx, ec, runErr)), nil)
	}
}

// CancelPoll is how often a running task's server reads it in a shared
// store: a cancel made on another replica so stops the run within it.
const CancelPoll = 500 * time.Millisecond

// errCanceledElsewhere ends a run whose task another replica canceled.
var errCanceledElsewhere = errors.New("the task was canceled on another replica")

// tend notes in the store that a task's run goes on, every heartbeat, so
// replicas reading it know it is not lost; and reads it every CancelPoll,
// to end the run once another replica canceled it. It returns when ctx
// ends.
func (x *executor) tend(ctx context.Context, cancel context.CancelCauseFunc, ec *a2asrv.ExecutorContext) {
	beat, poll := time.NewTicker(x.heartbeat), time.NewTicker(CancelPoll)
	defer beat.Stop()
	defer poll.Stop()
	user, id := ec.User.Name, string(ec.TaskID)
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			if err := x.tasks.TouchTask(ctx, user, id); err != nil && ctx.Err() == nil {
				x.log.WarnContext(ctx, "robby: A2A task heartbeat failed", slog.String("task", id), slog.Any("error", err))
			}
		case <-poll.C:
			if t, err := x.tasks.GetTask(ctx, user, id); err == nil && t.State == string(a2a.TaskStateCanceled) {
				cancel(errCanceledElsewhere)
				return
			}
		}
	}
}

// failure logs a failed run and says why in words for its client.
func (x *executor) failure(ctx context.Context, ec *a2asrv.ExecutorContext, err error) string {
	if why := httpapi.Stopped(err, robby.ErrBudget, robby.ErrMaxTurns); why != "" {
		return "The run stopped: " + strings.TrimPrefix(err.Error(), "robby: ")
	}
	if blocked, ok := httpapi.Blocked[*robby.GuardError](err); ok {
		return blocked
	}
	x.log.WarnContext(ctx, "robby: A2A run failed", slog.String("task", string(ec.TaskID)), slog.Any("error", err))
	_, msg := httpapi.UpstreamError(err, string(ec.TaskID), func(e *robby.APIError) (int, string) { return e.StatusCode, e.Message })
	return msg
}

// Cancel implements [a2asrv.AgentExecutor]: the task ends canceled, and its
// run's context with it. A durable task's run is cancelled on the
// DurableRunner, from whichever replica.
func (x *executor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil {
			yield(nil, a2a.ErrTaskNotFound)
			return
		}
		if d, _ := durableOf(ec.StoredTask); d.Run != "" && x.durable != nil {
			if err := x.durable.Cancel(ctx, d.Run); err != nil { // it may have ended: its end is recorded
				x.log.WarnContext(ctx, "robby: a durable A2A task's run not cancelled", slog.String("task", string(ec.TaskID)), slog.Any("error", err))
			}
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// failed is the status update of a task that failed, saying why.
func failed(ec *a2asrv.ExecutorContext, why string) *a2a.TaskStatusUpdateEvent {
	return a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(why)))
}

// promptOf is the text of a message: its text parts, and its data parts as
// JSON, a line each.
func promptOf(m *a2a.Message) (string, error) {
	if m == nil {
		return "", errors.New("no message")
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		switch c := p.Content.(type) {
		case a2a.Text:
			b.WriteString(string(c))
		case a2a.Data:
			js, err := json.Marshal(c.Value)
			if err != nil {
				return "", fmt.Errorf("a data part: %w", err)
			}
			b.Write(js)
		default:
			return "", errNotText
		}
	}
	if strings.TrimSpace(b.String()) == "" {
		return "", errors.New("the message holds no text")
	}
	return b.String(), nil
}

// memory keeps the conversations of a handler without a store. Each is an
// agent in the conversation: it holds the messages and, for a team's root,
// the agent of each, so the next run starts with the one holding it.
type memory struct {
	mu    sync.Mutex
	convs map[string]*robby.Agent
}

// get returns a clone of the conversation of key, for one run to go on with.
func (m *memory) get(key string) (*robby.Agent, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	conv, ok := m.convs[key]
	if !ok {
		return nil, false
	}
	return conv.Clone(), true
}

// put keeps conv as the conversation of key. conv is not used afterwards.
func (m *memory) put(key string, conv *robby.Agent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.convs[key] = conv
}
