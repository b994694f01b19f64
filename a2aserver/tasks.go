package a2aserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/robby-go/robby"
)

// storedTasks is a2asrv's task store over a [robby.TaskStore]: each task a
// record of the user the call authenticated, its JSON as A2A writes it.
// A task still submitted or working that this process does not run, and
// whose record went three heartbeats without a write, lost its server: it
// reads failed, saying so, and is stored so.
type storedTasks struct {
	ts        robby.TaskStore
	running   *running
	heartbeat time.Duration
	// adopt takes over a durable task whose replica stopped, and reports
	// whether it did.
	adopt func(user string, task *a2a.Task) bool
	// closed ends with the handler, which then writes its durable tasks
	// no more: they are left to another replica.
	closed context.Context
}

var _ taskstore.Store = (*storedTasks)(nil)

// errServerStopped is what a task whose server stopped mid-run says.
const errServerStopped = "The server running this task stopped before the task ended (it crashed, or was killed)."

// callUser is the user of a call: tasks are kept per user.
func callUser(ctx context.Context) (string, error) {
	cc, ok := a2asrv.CallContextFrom(ctx)
	if !ok || cc.User == nil || !cc.User.Authenticated {
		return "", a2a.ErrUnauthenticated
	}
	return cc.User.Name, nil
}

// record is the task as the store keeps it.
func record(user string, task *a2a.Task) (robby.Task, error) {
	data, err := json.Marshal(task)
	return robby.Task{ID: string(task.ID), User: user, ContextID: task.ContextID, State: string(task.Status.State), Data: data}, err
}

func (s *storedTasks) Create(ctx context.Context, task *a2a.Task) (taskstore.TaskVersion, error) {
	user, err := callUser(ctx)
	if err != nil {
		return taskstore.TaskVersionMissing, err
	}
	r, err := record(user, task)
	if err == nil {
		err = s.ts.CreateTask(ctx, r)
	}
	if errors.Is(err, robby.ErrTaskExists) {
		return taskstore.TaskVersionMissing, fmt.Errorf("%w: %w", taskstore.ErrTaskAlreadyExists, err)
	}
	return 1, err
}

func (s *storedTasks) Update(ctx context.Context, req *taskstore.UpdateRequest) (taskstore.TaskVersion, error) {
	user, err := callUser(ctx)
	if err != nil {
		return taskstore.TaskVersionMissing, err
	}
	if d, _ := durableOf(req.Task); d.Run != "" && s.closed.Err() != nil {
		return taskstore.TaskVersionMissing, errLeft
	}
	version := int64(req.PrevVersion)
	if req.PrevVersion == taskstore.TaskVersionMissing {
		prev, err := s.ts.GetTask(ctx, user, string(req.Task.ID))
		if err != nil {
			return taskstore.TaskVersionMissing, taskErr(err)
		}
		version = prev.Version
	}
	r, err := record(user, req.Task)
	if err != nil {
		return taskstore.TaskVersionMissing, err
	}
	v, err := s.ts.UpdateTask(ctx, r, version)
	return taskstore.TaskVersion(v), taskErr(err)
}

// taskErr gives a store's errors the meaning a2asrv reads in them.
func taskErr(err error) error {
	switch {
	case errors.Is(err, robby.ErrNoTask):
		return fmt.Errorf("%w: %w", a2a.ErrTaskNotFound, err)
	case errors.Is(err, robby.ErrConflict):
		return fmt.Errorf("%w: %w", taskstore.ErrConcurrentModification, err)
	}
	return err
}

func (s *storedTasks) Get(ctx context.Context, id a2a.TaskID) (*taskstore.StoredTask, error) {
	user, err := callUser(ctx)
	if err != nil {
		return nil, err
	}
	r, err := s.ts.GetTask(ctx, user, string(id))
	if err != nil {
		return nil, taskErr(err)
	}
	task, err := s.decode(ctx, r)
	if err != nil {
		return nil, err
	}
	return &taskstore.StoredTask{Task: task, Version: taskstore.TaskVersion(r.Version), User: user}, nil
}

// decode reads a record, and records the failure of a task whose server
// stopped mid-run.
func (s *storedTasks) decode(ctx context.Context, r robby.Task) (*a2a.Task, error) {
	var task a2a.Task
	if err := json.Unmarshal(r.Data, &task); err != nil {
		return nil, fmt.Errorf("task %q as stored: %w", r.ID, err)
	}
	st := task.Status.State
	if st != a2a.TaskStateSubmitted && st != a2a.TaskStateWorking ||
		time.Since(r.Updated) < 3*s.heartbeat || s.running.has(r.User, r.ID) || s.adopt(r.User, &task) {
		return &task, nil
	}
	now := time.Now()
	task.Status = a2a.TaskStatus{State: a2a.TaskStateFailed, Timestamp: &now,
		Message: a2a.NewMessageForTask(a2a.MessageRoleAgent, &task, a2a.NewTextPart(errServerStopped))}
	failed, err := record(r.User, &task)
	if err != nil {
		return nil, err
	}
	if _, err := s.ts.UpdateTask(ctx, failed, r.Version); errors.Is(err, robby.ErrConflict) {
		// Another reader recorded it first, or its server was alive after all.
		again, err := s.ts.GetTask(ctx, r.User, r.ID)
		if err != nil {
			return nil, taskErr(err)
		}
		return s.decode(ctx, again)
	} else if err != nil {
		return nil, err
	}
	return &task, nil
}

func (s *storedTasks) List(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	user, err := callUser(ctx)
	if err != nil {
		return nil, err
	}
	size := req.PageSize
	if size == 0 {
		size = 50
	}
	if req.Status == unrecognized {
		req.Status = a2a.TaskStateUnspecified
	}
	if err := checkList(req, size); err != nil {
		return nil, err
	}
	opts := robby.TaskListOptions{ContextID: req.ContextID, State: string(req.Status), Limit: size, Cursor: req.PageToken}
	if req.StatusTimestampAfter != nil {
		opts.UpdatedAfter = *req.StatusTimestampAfter
	}
	page, err := s.ts.ListTasks(ctx, user, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", a2a.ErrInvalidParams, err)
	}
	resp := &a2a.ListTasksResponse{Tasks: []*a2a.Task{}, TotalSize: page.Total, NextPageToken: page.Next}
	for _, r := range page.Tasks {
		task, err := s.decode(ctx, r)
		if err != nil {
			return nil, err
		}
		trim(task, req)
		resp.Tasks = append(resp.Tasks, task)
	}
	resp.PageSize = len(resp.Tasks) // "the page size used for this response": what the a2a-tck reads
	return resp, nil
}

// unrecognized is the status filter @a2a-js/sdk sends when none is given:
// protobuf's name for an enum value it does not know. It selects all.
const unrecognized a2a.TaskState = "UNRECOGNIZED"

// checkList refuses what a list request may not ask for, as invalid params
// (-32602): a page size out of 1 to 100, a negative historyLength, a status
// that is none of A2A's.
func checkList(req *a2a.ListTasksRequest, size int) error {
	switch {
	case size < 1 || size > 100:
		return fmt.Errorf("pageSize must be between 1 and 100, got %d: %w", size, a2a.ErrInvalidParams)
	case req.HistoryLength != nil && *req.HistoryLength < 0:
		return fmt.Errorf("historyLength must not be negative, got %d: %w", *req.HistoryLength, a2a.ErrInvalidParams)
	case req.Status != a2a.TaskStateUnspecified && !slices.Contains(taskStates, req.Status):
		return fmt.Errorf("status %q is not a task state: %w", req.Status, a2a.ErrInvalidParams)
	}
	return nil
}

// taskStates are the states a task may be listed by.
var taskStates = []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateInputRequired,
	a2a.TaskStateAuthRequired, a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateCanceled, a2a.TaskStateRejected}

// trim leaves out of a listed task what the request did not ask for: the
// history beyond historyLength (100 by default), the artifacts unless
// asked for.
func trim(task *a2a.Task, req *a2a.ListTasksRequest) {
	n := 100
	if req.HistoryLength != nil {
		n = max(*req.HistoryLength, 0)
	}
	if len(task.History) > n {
		task.History = task.History[len(task.History)-n:]
	}
	if !req.IncludeArtifacts {
		task.Artifacts = nil
	}
}

// running is the set of tasks this process runs, which are never taken for
// lost.
type running struct {
	mu  sync.Mutex
	set map[[2]string]bool
}

func (r *running) add(user, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.set[[2]string{user, id}] = true
}

// claim adds a task that is not in the set, and reports whether it did.
func (r *running) claim(user, id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.set[[2]string{user, id}] {
		return false
	}
	r.set[[2]string{user, id}] = true
	return true
}

func (r *running) remove(user, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.set, [2]string{user, id})
}

func (r *running) has(user, id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.set[[2]string{user, id}]
}
