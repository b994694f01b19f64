package a2aserver_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/a2aserver"
	"github.com/robby-go/robby/robbytest/agenttest"
)

// scriptedRunner is a DurableRunner whose one run the test writes: its
// events, its end. Package temporal's TaskRunner is tested on Temporal.
type scriptedRunner struct {
	mu        sync.Mutex
	job       *a2aserver.DurableJob
	events    []robby.Event
	res       *robby.Result
	err       error
	done      chan struct{} // closed by end
	cancelled int
	waiting   []robby.ToolCall // the calls awaiting an approval
	approvals []string         // the answers, "ID approved reason"
	awaiting  []robby.ToolCall // the caller-run calls awaiting their results
	results   []string         // the results sent, "ID output"
}

func newScriptedRunner() *scriptedRunner { return &scriptedRunner{done: make(chan struct{})} }

func (r *scriptedRunner) Start(_ context.Context, job a2aserver.DurableJob) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.job = &job
	return nil
}

func (r *scriptedRunner) Progress(_ context.Context, id string) (a2aserver.DurableProgress, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.job == nil || r.job.ID != id {
		return a2aserver.DurableProgress{}, fmt.Errorf("no run %s", id)
	}
	return a2aserver.DurableProgress{Events: slices.Clone(r.events), AwaitingApproval: slices.Clone(r.waiting),
		AwaitingResults: slices.Clone(r.awaiting)}, nil
}

func (r *scriptedRunner) SendToolResults(_ context.Context, id string, results []robby.ToolResult) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.job == nil || r.job.ID != id {
		return fmt.Errorf("no run %s", id)
	}
	for _, res := range results {
		r.results = append(r.results, res.Call.ID+" "+res.Output)
		r.awaiting = slices.DeleteFunc(r.awaiting, func(c robby.ToolCall) bool { return c.ID == res.Call.ID })
	}
	return nil
}

func (r *scriptedRunner) Approve(_ context.Context, id, callID string, approved bool, reason string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.job == nil || r.job.ID != id {
		return fmt.Errorf("no run %s", id)
	}
	r.approvals = append(r.approvals, fmt.Sprintf("%s %v %s", callID, approved, reason))
	r.waiting = slices.DeleteFunc(r.waiting, func(c robby.ToolCall) bool { return c.ID == callID })
	return nil
}

// await adds tool calls that wait for an approval.
func (r *scriptedRunner) await(calls ...robby.ToolCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range calls {
		r.events = append(r.events, robby.Event{Kind: robby.EventToolCall, Turn: 1, ToolCall: &calls[i]})
	}
	r.waiting = append(r.waiting, calls...)
}

func (r *scriptedRunner) Wait(ctx context.Context, _ string) (*robby.Result, error) {
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.res, r.err
}

func (r *scriptedRunner) Cancel(context.Context, string) error {
	r.mu.Lock()
	r.cancelled++
	r.mu.Unlock()
	r.end(&robby.Result{}, context.Canceled)
	return nil
}

func (r *scriptedRunner) add(events ...robby.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, events...)
}

func (r *scriptedRunner) end(res *robby.Result, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.done:
	default:
		r.res, r.err = res, err
		close(r.done)
	}
}

func (r *scriptedRunner) started() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.job != nil
}

// startDurable sends Alice's message to a handler of opts, answered at
// once, and returns once its durable run started.
func startDurable(t *testing.T, opts a2aserver.Options, runner *scriptedRunner) (*fixture, *a2a.Task) {
	t.Helper()
	f := newFixture(t, opts)
	req := message("What is 1 + 2?", "")
	req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	res, err := f.client(t, "alice-token").SendMessage(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, runner.started)
	return f, res.(*a2a.Task)
}

// A durable task whose handler closed mid-run (a deploy) is taken over by
// the two replicas that read it at once: it reads WORKING, with the steps
// its run made, then COMPLETED with the answer; its history holds each
// step once, and its context's conversation the answer once.
func TestDurableTaskTakenOver(t *testing.T) {
	runner := newScriptedRunner()
	opts := a2aserver.Options{Store: agenttest.NewStore(t), Heartbeat: 100 * time.Millisecond, Durable: runner}
	f, task := startDurable(t, opts, runner)
	call := robby.ToolCall{ID: "c1", Name: "add", Arguments: `{"a":1,"b":2}`}
	runner.add(robby.Event{Kind: robby.EventToolCall, Turn: 1, ToolCall: &call},
		robby.Event{Kind: robby.EventToolResult, Turn: 1, ToolCall: &call, ToolResult: &robby.ToolResult{Call: call, Output: "3"}})
	alice := f.client(t, "alice-token")
	waitFor(t, func() bool {
		got, err := alice.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
		return err == nil && got.Status.Message != nil && len(got.History) == 2 // the message, the call
	})
	f.h.Close()

	replicas := []*fixture{f.replica(t, opts), f.replica(t, opts)}
	time.Sleep(350 * time.Millisecond) // three heartbeats without a write
	var wg sync.WaitGroup
	for _, g := range replicas {
		c := g.client(t, "alice-token")
		wg.Go(func() {
			got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
			if err != nil || got.Status.State != a2a.TaskStateWorking {
				t.Errorf("read while its run goes on: %v, %+v", err, got)
			}
		})
	}
	wg.Wait()
	runner.add(robby.Event{Kind: robby.EventText, Turn: 2, Delta: "1 + 2 = 3"}, robby.Event{Kind: robby.EventTurnEnd, Turn: 2})
	runner.end(&robby.Result{Text: "1 + 2 = 3", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.AssistantMessage("1 + 2 = 3")}}, nil)

	c := replicas[1].client(t, "alice-token")
	var got *a2a.Task
	var err error
	waitFor(t, func() bool {
		got, err = c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
		return err == nil && got.Status.State.Terminal()
	})
	if got.Status.State != a2a.TaskStateCompleted || artifactText(got) != "1 + 2 = 3" || len(got.History) != 3 {
		t.Errorf("read %s, %q, %d messages; want completed, the answer, 3 (the message, the call, the result)",
			got.Status.State, artifactText(got), len(got.History))
	}
	_, msgs, err := opts.Store.Load(t.Context(), "alice", got.ContextID)
	if err != nil || len(msgs) != 2 {
		t.Errorf("the conversation: %d messages, %v; want the message and the answer", len(msgs), err)
	}
}

// CancelTask on a replica that does not run a durable task cancels its run.
func TestDurableTaskCancelledOnAnotherReplica(t *testing.T) {
	runner := newScriptedRunner()
	opts := a2aserver.Options{Store: agenttest.NewStore(t), Durable: runner}
	f, task := startDurable(t, opts, runner)
	got, err := f.replica(t, opts).client(t, "alice-token").CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel on another replica: %v, %+v", err, got)
	}
	waitFor(t, func() bool {
		got, err := f.client(t, "alice-token").GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
		return err == nil && got.Status.State == a2a.TaskStateCanceled
	})
	runner.mu.Lock()
	defer runner.mu.Unlock()
	if runner.cancelled == 0 {
		t.Error("the run was not cancelled")
	}
}

// A durable run's calls that wait for approvals put its task in
// INPUT_REQUIRED, asking for them; the client's answer (an approvals data
// part: one approved, one refused) goes to the run, one approval per call,
// and the task follows the run on to COMPLETED, each step told once.
func TestDurableTaskAsksForApprovals(t *testing.T) {
	runner := newScriptedRunner()
	opts := a2aserver.Options{Store: agenttest.NewStore(t), Durable: runner, Approve: []string{"add"}}
	f, task := startDurable(t, opts, runner)
	if got := runner.job.Approve; !slices.Equal(got, []string{"add"}) {
		t.Errorf("the run's job approves %v; want [add]", got)
	}
	add := robby.ToolCall{ID: "c1", Name: "add", Arguments: `{"a":1,"b":2}`}
	add2 := robby.ToolCall{ID: "c2", Name: "add", Arguments: `{"a":2,"b":2}`}
	runner.await(add, add2)
	alice := f.client(t, "alice-token")
	task = readState(t, alice, task.ID, a2a.TaskStateInputRequired)
	ask := asked(t, task)["approve"].([]any)
	if len(ask) != 2 || ask[0].(map[string]any)["id"] != "c1" || ask[1].(map[string]any)["id"] != "c2" {
		t.Fatalf("asked to approve %v; want c1 and c2", ask)
	}

	req := &a2a.SendMessageRequest{Config: &a2a.SendMessageConfig{ReturnImmediately: true},
		Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewDataPart(map[string]any{"approvals": []any{
			map[string]any{"id": "c1", "approved": true},
			map[string]any{"id": "c2", "approved": false, "reason": "too much"}}}))}
	send(t, alice, req)
	waitFor(t, func() bool {
		runner.mu.Lock()
		defer runner.mu.Unlock()
		return len(runner.approvals) == 2
	})
	if got := strings.Join(runner.approvals, "|"); got != "c1 true |c2 false too much" {
		t.Errorf("the run's approvals: %q", got)
	}
	got := finishApproved(t, runner, add, alice, task.ID)
	// The history: the message, the two calls, the ask, the answer, the result.
	if got.Status.State != a2a.TaskStateCompleted || artifactText(got) != "1 + 2 = 3" || len(got.History) != 6 {
		t.Errorf("read %s, %q, %d messages; want completed, the answer, 6", got.Status.State, artifactText(got), len(got.History))
	}
}

// A durable run's call of a caller-run tool puts its task in
// INPUT_REQUIRED, asking for the call's result; the client's toolResults
// data part goes to the run, and the task follows the run on to COMPLETED.
func TestDurableTaskAsksForCallerResults(t *testing.T) {
	runner := newScriptedRunner()
	opts := a2aserver.Options{Store: agenttest.NewStore(t), Durable: runner,
		CallerTools: []openai.FunctionDefinitionParam{lookup}}
	f, task := startDurable(t, opts, runner)
	if got := runner.job.CallerTools; len(got) != 1 || got[0].Name != "lookup" {
		t.Errorf("the run's job has the caller tools %v; want lookup", got)
	}
	call := robby.ToolCall{ID: "c1", Name: "lookup", Arguments: `{"word":"robby"}`}
	runner.mu.Lock()
	runner.events = append(runner.events, robby.Event{Kind: robby.EventToolCall, Turn: 1, ToolCall: &call})
	runner.awaiting = append(runner.awaiting, call)
	runner.mu.Unlock()
	alice := f.client(t, "alice-token")
	task = readState(t, alice, task.ID, a2a.TaskStateInputRequired)
	if ask, _ := asked(t, task)["toolCalls"].([]any); len(ask) != 1 || ask[0].(map[string]any)["id"] != "c1" {
		t.Fatalf("asked %v; want the result of c1", asked(t, task))
	}
	send(t, alice, &a2a.SendMessageRequest{Config: &a2a.SendMessageConfig{ReturnImmediately: true},
		Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewDataPart(map[string]any{
			"toolResults": []any{map[string]any{"id": "c1", "output": "a Go agent library"}}}))})
	waitFor(t, func() bool {
		runner.mu.Lock()
		defer runner.mu.Unlock()
		return len(runner.results) == 1
	})
	if got := runner.results[0]; got != "c1 a Go agent library" {
		t.Errorf("the run's results: %q", got)
	}
	runner.add(robby.Event{Kind: robby.EventText, Turn: 2, Delta: "A robot."}, robby.Event{Kind: robby.EventTurnEnd, Turn: 2})
	runner.end(&robby.Result{Text: "A robot.", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.AssistantMessage("A robot.")}}, nil)
	got := readState(t, alice, task.ID, a2a.TaskStateCompleted)
	if artifactText(got) != "A robot." {
		t.Errorf("the answer: %q", artifactText(got))
	}
}

// A replica taking over a durable task whose run then waits for an
// approval writes the ask: the task reads INPUT_REQUIRED there, and the
// answer given to that replica completes it.
func TestDurableTaskTakenOverAsks(t *testing.T) {
	runner := newScriptedRunner()
	opts := a2aserver.Options{Store: agenttest.NewStore(t), Heartbeat: 100 * time.Millisecond, Durable: runner, Approve: []string{"*"}}
	f, task := startDurable(t, opts, runner)
	readState(t, f.client(t, "alice-token"), task.ID, a2a.TaskStateWorking) // the run's start stored
	f.h.Close()
	g := f.replica(t, opts)
	time.Sleep(350 * time.Millisecond) // three heartbeats without a write
	add := robby.ToolCall{ID: "c1", Name: "add", Arguments: `{"a":1,"b":2}`}
	runner.await(add)
	alice := g.client(t, "alice-token")
	task = readState(t, alice, task.ID, a2a.TaskStateInputRequired)
	if ask := asked(t, task)["approve"].([]any); len(ask) != 1 || ask[0].(map[string]any)["id"] != "c1" {
		t.Fatalf("asked to approve %v; want c1", ask)
	}
	send(t, alice, &a2a.SendMessageRequest{Config: &a2a.SendMessageConfig{ReturnImmediately: true},
		Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewTextPart("yes"))})
	waitFor(t, func() bool {
		runner.mu.Lock()
		defer runner.mu.Unlock()
		return len(runner.approvals) == 1
	})
	got := finishApproved(t, runner, add, alice, task.ID)
	// The history: the message, the call, the ask, the answer, the result.
	if got.Status.State != a2a.TaskStateCompleted || artifactText(got) != "1 + 2 = 3" || len(got.History) != 5 ||
		runner.approvals[0] != "c1 true " {
		t.Errorf("read %s, %q, %d messages, approvals %q; want completed, the answer, 5, c1 approved",
			got.Status.State, artifactText(got), len(got.History), runner.approvals)
	}
}

// finishApproved ends the run after its approved call of add: its result,
// then the answer. It returns the task once it reads ended.
func finishApproved(t *testing.T, runner *scriptedRunner, add robby.ToolCall, c *a2aclient.Client, id a2a.TaskID) *a2a.Task {
	t.Helper()
	runner.add(robby.Event{Kind: robby.EventToolResult, Turn: 1, ToolCall: &add, ToolResult: &robby.ToolResult{Call: add, Output: "3"}},
		robby.Event{Kind: robby.EventText, Turn: 2, Delta: "1 + 2 = 3"}, robby.Event{Kind: robby.EventTurnEnd, Turn: 2})
	runner.end(&robby.Result{Text: "1 + 2 = 3", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.AssistantMessage("1 + 2 = 3")}}, nil)
	var got *a2a.Task
	waitFor(t, func() bool {
		var err error
		got, err = c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
		return err == nil && got.Status.State.Terminal()
	})
	return got
}

// readState returns the task once it reads in state.
func readState(t *testing.T, c *a2aclient.Client, id a2a.TaskID, state a2a.TaskState) *a2a.Task {
	t.Helper()
	var got *a2a.Task
	waitFor(t, func() bool {
		var err error
		got, err = c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
		return err == nil && got.Status.State == state
	})
	return got
}
