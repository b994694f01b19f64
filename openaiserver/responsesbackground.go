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
	run.resp.Background = true
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context())) // the request's values, not its end
	unhook := context.AfterFunc(h.bg.ctx, cancel)
	ctx, end := h.runs.start(ctx, run.resp.ID)
	requestID := w.Header().Get("X-Request-Id")
	h.bg.wg.Add(1)
	go func() {
		defer h.bg.wg.Done()
		defer cancel()
		defer unhook()
		defer end()
		h.runBackground(ctx, run, requestID)
	}()
	httpapi.WriteJSON(w, http.StatusOK, run.resp)
}

// runBackground runs a background response and records how it ended.
func (h *Handler) runBackground(ctx context.Context, run *responseRun, requestID string) {
	stop := h.heartbeat(ctx, run)
	rr := &responsesReply{resp: run.resp}
	var res *robby.Result
	var err error
	if h.opts.Background != nil {
		res, err = h.runElsewhere(ctx, run)
	} else {
		res, err = run.conv.Resume(ctx, run.opts...)
	}
	rr.done(res, err)
	switch {
	case err == nil || httpapi.Limited(err):
	case errors.Is(context.Cause(ctx), errCancelled) || ctx.Err() != nil:
		rr.resp.Status = "cancelled" // by the client, or by Close
	default:
		_, msg := httpapi.UpstreamError(err, requestID)
		rr.resp.Status, rr.resp.Error = "failed", &wireResponseError{Code: "server_error", Message: msg}
		h.opts.Logger.WarnContext(ctx, "robby: background response failed", slog.String("request_id", requestID),
			slog.String("response_id", run.resp.ID), slog.Any("error", err))
	}
	stop()
	h.record(ctx, run, rr.resp)
}

// runElsewhere runs a background response on the handler's
// BackgroundRunner, and saves the messages its run added.
func (h *Handler) runElsewhere(ctx context.Context, run *responseRun) (*robby.Result, error) {
	r := h.opts.Background
	err := r.Start(ctx, run.job)
	if err != nil {
		return new(robby.Result), err
	}
	res, err := r.Wait(ctx, run.job.ID)
	if ctx.Err() != nil {
		if cerr := r.Cancel(context.WithoutCancel(ctx), run.job.ID); cerr != nil {
			h.opts.Logger.WarnContext(ctx, "robby: background run not cancelled", slog.String("response_id", run.job.ID),
				slog.Any("error", cerr))
		}
	}
	if res == nil {
		res = new(robby.Result)
	}
	msgs := make([]robby.Message, 0, len(res.Messages))
	for _, m := range res.Messages {
		raw, merr := m.MarshalJSON()
		if merr != nil {
			return res, merr
		}
		msgs = append(msgs, robby.Message{Chat: raw})
	}
	if len(msgs) > 0 {
		if serr := h.opts.Store.Append(context.WithoutCancel(ctx), run.user, run.conversation, run.stored, msgs...); serr != nil {
			return res, serr
		}
	}
	return res, err
}

// Close stops the background responses still running in this process,
// recorded "cancelled", and returns once they are. The handler answers
// requests still, but starts no background response anymore: those are
// recorded "cancelled" at once.
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
	Wait(ctx context.Context, id string) (*robby.Result, error)
	// Cancel stops the run of the response id.
	Cancel(ctx context.Context, id string) error
}

// A BackgroundJob is the run of a background response, for a
// [BackgroundRunner]: everything it needs but the agent, which the runner
// finds by name.
type BackgroundJob struct {
	ID           string                                   // the response's ID
	Agent        string                                   // the agent's name: the request's model
	Messages     []openai.ChatCompletionMessageParamUnion // the conversation, input included, after the agent's system prompt
	CallerTools  []openai.FunctionDefinitionParam         // the client's functions: their calls end the run
	Instructions string                                   // a system message for this run only
	Params       openai.ChatCompletionNewParams           // the request's parameters (temperature, ...)
}
