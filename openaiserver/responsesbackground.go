package openaiserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"

	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/httpapi"
)

// background holds the background responses running in this process.
type background struct {
	ctx  context.Context // ended by Close
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// startBackground answers a background response at once, as it starts,
// and runs it on, detached from its request: its record in the store says
// how it goes, for GET, until it ends.
func (h *Handler) startBackground(w http.ResponseWriter, r *http.Request, run *responseRun) {
	requestID := w.Header().Get("X-Request-Id")
	h.detach(r.Context(), run.resp.ID, func(ctx context.Context) { h.runBackground(ctx, run, requestID, false) })
	httpapi.WriteJSON(w, http.StatusOK, run.resp)
}

// detach runs fn in a goroutine of the handler's, as the run of response
// id here, for cancel. Its context has parent's values but not its end;
// Close ends it. detach returns the run. If a run of id goes on here
// already, it runs nothing and returns nil.
func (h *Handler) detach(parent context.Context, id string, fn func(context.Context)) *liveRun {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	ctx, lr, end := h.runs.start(ctx, id)
	if lr == nil {
		cancel()
		return nil
	}
	unhook := context.AfterFunc(h.bg.ctx, cancel)
	h.bg.wg.Add(1)
	go func() {
		defer h.bg.wg.Done()
		defer cancel()
		defer unhook()
		defer end()
		fn(ctx)
	}()
	return lr
}

// errDetached ends the wait for a run that goes on elsewhere when the
// handler closes. Its record is left in progress. Another replica, or
// this one started again, takes it over.
var errDetached = errors.New("robby: background run left to its runner")

// runBackground runs a background response, or waits for its run on the
// BackgroundRunner if adopted (started by another replica), and records
// how it ended.
func (h *Handler) runBackground(ctx context.Context, run *responseRun, requestID string, adopted bool) {
	stop := h.heartbeat(ctx, run, nil)
	var res *robby.Result
	var err error
	if h.opts.Background != nil {
		res, err = h.runElsewhere(ctx, run, adopted)
	} else {
		res, err = run.conv.Resume(ctx, run.opts...)
	}
	stop()
	if errors.Is(err, errDetached) {
		return
	}
	rr := &responsesReply{resp: run.resp}
	rr.done(res, err)
	switch {
	case err == nil || limited(err):
	case errors.Is(context.Cause(ctx), errCancelled) || ctx.Err() != nil || errors.Is(err, context.Canceled):
		rr.resp.Status = "cancelled" // by the client (on any replica), or by Close
	default:
		_, _, _, msg := runError(err, requestID)
		rr.resp.Status, rr.resp.Error = "failed", &wireResponseError{Code: "server_error", Message: msg}
		h.opts.Logger.WarnContext(ctx, "robby: background response failed", slog.String("request_id", requestID),
			slog.String("response_id", run.resp.ID), slog.Any("error", err))
	}
	h.record(ctx, run, rr.resp, nil)
}

// runElsewhere runs a background response on the handler's
// BackgroundRunner (or, adopted, only waits for its run), and saves the
// messages its run added. Closing the handler leaves the run going.
func (h *Handler) runElsewhere(ctx context.Context, run *responseRun, adopted bool) (*robby.Result, error) {
	r := h.opts.Background
	if !adopted {
		if err := r.Start(ctx, run.job); err != nil {
			return new(robby.Result), err
		}
	}
	res, err := r.Wait(ctx, run.job.ID)
	if err != nil && ctx.Err() != nil {
		if !errors.Is(context.Cause(ctx), errCancelled) {
			return res, errDetached
		}
		if cerr := r.Cancel(context.WithoutCancel(ctx), run.job.ID); cerr != nil {
			h.opts.Logger.WarnContext(ctx, "robby: background run not cancelled", slog.String("response_id", run.job.ID),
				slog.Any("error", cerr))
		}
	}
	if res == nil {
		res = new(robby.Result)
	}
	if serr := h.save(context.WithoutCancel(ctx), run, res); serr != nil {
		return res, serr
	}
	return res, err
}

// save appends the messages a run on the BackgroundRunner added to its
// response's conversation, once. Several replicas may wait for one run:
// one took it over while the other still lived. Append is told the count
// of messages before them. It lets one write them; the others find them
// written.
func (h *Handler) save(ctx context.Context, run *responseRun, res *robby.Result) error {
	msgs := make([]robby.Message, 0, len(res.Messages))
	for i, m := range res.Messages {
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
	err := h.opts.Store.Append(ctx, run.user, run.conversation, run.stored, msgs...)
	if !errors.Is(err, robby.ErrConflict) {
		return err
	}
	c, _, lerr := h.opts.Store.Load(ctx, run.user, run.conversation)
	if lerr == nil && c.Messages == run.stored+int64(len(msgs)) {
		return nil // saved by another replica
	}
	return err
}

// adopt takes over the user's background response resp. Its replica
// stopped, but its run goes on, on the BackgroundRunner. adopt waits for
// the run, saves its messages and records its end, as that replica would
// have. It returns the run here, or nil once the handler is closed.
func (h *Handler) adopt(ctx context.Context, user string, resp wireResponse, requestID string) *liveRun {
	if h.bg.ctx.Err() != nil {
		return nil
	}
	conv, start, _ := parseResponseID(resp.ID)
	run := &responseRun{resp: resp, user: user, conversation: conv, stored: start, job: BackgroundJob{ID: resp.ID}}
	run.resp.Status, run.resp.Error, run.resp.Output = "in_progress", nil, []wireOutputItem{}
	adopted := func(ctx context.Context) {
		h.opts.Logger.InfoContext(ctx, "robby: taking over a background response", slog.String("request_id", requestID),
			slog.String("response_id", resp.ID))
		h.record(ctx, run, run.resp, nil) // at once: a heartbeat, so that other replicas leave it to this one
		h.runBackground(ctx, run, requestID, true)
	}
	if lr := h.detach(ctx, resp.ID, adopted); lr != nil {
		return lr
	}
	return h.runs.get(resp.ID)
}

// Close stops the background responses still running in this process,
// recorded "cancelled", and returns once they are. Those run by
// [Options.Background] go on there: Close only stops waiting for them,
// and another replica sharing the store (or this one, started again)
// takes them over. The handler answers requests still, but starts no
// background response anymore: those are recorded "cancelled" at once.
func (h *Handler) Close() error {
	h.bg.stop()
	h.bg.wg.Wait()
	return nil
}

// A BackgroundRunner runs the runs of background responses elsewhere than
// in the handler's process ([Options.Background]). Its methods may be
// called concurrently.
type BackgroundRunner interface {
	// Start starts job's run. Starting a job whose ID runs already
	// attaches to that run.
	Start(ctx context.Context, job BackgroundJob) error
	// Wait waits for the run of the response id to end and returns its
	// result and error, as [robby.Agent.Resume] would: the messages the
	// run added, Pending the calls of the client's functions it ended on.
	// A run cancelled (by Cancel, from any process) returns an error
	// wrapping [context.Canceled]. Any process may wait for any run, as
	// many times as it likes: a replica that takes over a response whose
	// replica stopped waits for its run.
	Wait(ctx context.Context, id string) (*robby.Result, error)
	// Cancel stops the run of the response id, from any process.
	Cancel(ctx context.Context, id string) error
}

// A BackgroundJob is the run of a background response, for a
// [BackgroundRunner]: everything it needs but the agent, which the runner
// finds by name.
type BackgroundJob struct {
	ID           string                                   // the response's ID
	Agent        string                                   // the agent's name: the request's model
	Messages     []openai.ChatCompletionMessageParamUnion // the conversation, input included, after the agent's system prompt
	Agents       []string                                 // a team's: the agent of each of Messages (robby.Message.Agent), nil for none
	CallerTools  []openai.FunctionDefinitionParam         // the client's functions: their calls end the run
	Instructions string                                   // a system message for this run only
	Params       openai.ChatCompletionNewParams           // the request's parameters (temperature, ...)
}
