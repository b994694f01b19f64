package a2aserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/robby-go/robby"
)

// Taking over: a durable task whose replica stopped is followed by the
// replica that reads it next, which writes the run's progress into the task.

// adopt takes over the durable task of a replica that stopped: its run
// goes on, on the DurableRunner. This process follows it, writes its
// progress and end into the task, and saves its messages, as that replica
// would have. It reports whether the task is durable and so followed.
func (x *executor) adopt(user string, task *a2a.Task) bool {
	d, ok := durableOf(task)
	if !ok || x.durable == nil || x.tasks == nil || x.base.Err() != nil {
		return false
	}
	if !x.running.claim(user, string(task.ID)) {
		return true // followed here already
	}
	go func() {
		defer x.running.remove(user, string(task.ID))
		ctx := x.base
		x.log.InfoContext(ctx, "robby: taking over a durable A2A task", slog.String("task", string(task.ID)))
		ec := &a2asrv.ExecutorContext{TaskID: task.ID, ContextID: task.ContextID}
		w := &taskWriter{ts: x.tasks, user: user, id: string(task.ID), every: x.heartbeat}
		w.touch(ctx) // at once, so that other replicas leave it to this one
		var events []robby.Event
		var waits *ask
		res, err := x.follow(ctx, d, func(p DurableProgress) bool {
			events, waits = p.Events, p.waiting(nil)
			if werr := w.write(ctx, ec, events, nil); werr != nil && ctx.Err() == nil {
				x.log.WarnContext(ctx, "robby: a durable A2A task's progress not stored", slog.String("task", string(task.ID)), slog.Any("error", werr))
			}
			return waits == nil
		})
		if ctx.Err() != nil {
			return // closed: left to another replica
		}
		var end *a2a.TaskStatusUpdateEvent
		if waits != nil {
			end = asking(ec, waits, len(events))
		} else {
			end = x.ended(ctx, ec, d, user, res, err)
		}
		if werr := w.write(ctx, ec, events, end); werr != nil {
			x.log.WarnContext(ctx, "robby: a durable A2A task's end not stored", slog.String("task", string(task.ID)), slog.Any("error", werr))
		}
	}()
	return true
}

// A taskWriter writes a followed durable run's progress into its task, in
// the store, touching it every write.
type taskWriter struct {
	ts       robby.TaskStore
	user, id string
	told     int           // the events written so far
	every    time.Duration // the heartbeat
	last     time.Time     // the last write
}

// touch notes that the run goes on, once a heartbeat.
func (w *taskWriter) touch(ctx context.Context) {
	if time.Since(w.last) < w.every {
		return
	}
	if w.ts.TouchTask(ctx, w.user, w.id) == nil { // else the next one retries
		w.last = time.Now()
	}
}

// write folds events, then end if not nil, into the stored task. A task
// ended meanwhile (cancelled on another replica) is left so. A write that
// conflicts with another is made again on the task as it is now.
func (w *taskWriter) write(ctx context.Context, ec *a2asrv.ExecutorContext, events []robby.Event, end *a2a.TaskStatusUpdateEvent) error {
	if end == nil && len(events) == w.told {
		w.touch(ctx)
		return nil
	}
	for range 5 {
		r, err := w.ts.GetTask(ctx, w.user, w.id)
		if err != nil {
			return err
		}
		var task a2a.Task
		if err := json.Unmarshal(r.Data, &task); err != nil {
			return err
		}
		if task.Status.State.Terminal() {
			return nil
		}
		fold(&task, ec, events)
		if end != nil {
			apply(&task, end)
		}
		rec, err := record(w.user, &task)
		if err != nil {
			return err
		}
		if _, err = w.ts.UpdateTask(ctx, rec, r.Version); !errors.Is(err, robby.ErrConflict) {
			w.told, w.last = len(events), time.Now()
			return err
		}
	}
	return fmt.Errorf("task %s: %w", w.id, robby.ErrConflict)
}

// fold applies a durable run's events to its task, as its stream told
// them, skipping the status messages the task holds already.
func fold(task *a2a.Task, ec *a2asrv.ExecutorContext, events []robby.Event) {
	held := map[string]bool{}
	for _, m := range task.History {
		held[m.ID] = true
	}
	if m := task.Status.Message; m != nil {
		held[m.ID] = true
	}
	s := &taskStream{ec: ec, keyed: true, yield: func(e a2a.Event, _ error) bool {
		if su, ok := e.(*a2a.TaskStatusUpdateEvent); ok && su.Status.Message != nil && held[su.Status.Message.ID] {
			return true
		}
		apply(task, e)
		return true
	}}
	for ; s.seq < len(events); s.seq++ {
		s.event(events[s.seq])
	}
}

// apply applies one event to a task, as a2asrv's task manager does: a
// status's message goes to the history when the next status comes; an
// artifact is replaced, or appended to, by ID.
func apply(task *a2a.Task, e a2a.Event) {
	switch e := e.(type) {
	case *a2a.TaskStatusUpdateEvent:
		if task.Status.Message != nil {
			task.History = append(task.History, task.Status.Message)
		}
		task.Status = e.Status
		if e.Metadata != nil {
			if task.Metadata == nil {
				task.Metadata = map[string]any{}
			}
			maps.Copy(task.Metadata, e.Metadata)
		}
	case *a2a.TaskArtifactUpdateEvent:
		for i, a := range task.Artifacts {
			if a.ID == e.Artifact.ID {
				if e.Append {
					a.Parts = append(a.Parts, e.Artifact.Parts...)
				} else {
					task.Artifacts[i] = e.Artifact
				}
				return
			}
		}
		task.Artifacts = append(task.Artifacts, e.Artifact)
	}
}
