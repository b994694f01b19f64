package openaiserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"

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
	res, err := run.conv.Resume(ctx, run.opts...)
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

// Close stops the background responses still running in this process,
// recorded "cancelled", and returns once they are. The handler answers
// requests still, but starts no background response anymore: those are
// recorded "cancelled" at once.
func (h *Handler) Close() error {
	h.bg.stop()
	h.bg.wg.Wait()
	return nil
}
