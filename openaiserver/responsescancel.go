package openaiserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"

	"github.com/robby-go/robby/internal/httpapi"
)

// errCancelled stops the run of a response that POST
// /v1/responses/{id}/cancel cancels.
var errCancelled = errors.New("robby: response cancelled")

// runs are the stored responses running in this process, by ID, so that a
// cancel request can stop one. The zero value is ready to use; it is safe
// for concurrent use.
type runs struct {
	mu sync.Mutex
	m  map[string]*liveRun
}

type liveRun struct {
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the run has ended and been recorded
}

// start registers the run of response id: its context, and the func
// that ends it. If a run of id is registered already, it registers
// nothing and returns a nil liveRun.
func (rs *runs) start(ctx context.Context, id string) (context.Context, *liveRun, func()) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.m[id] != nil {
		return ctx, nil, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	lr := &liveRun{cancel: cancel, done: make(chan struct{})}
	if rs.m == nil {
		rs.m = map[string]*liveRun{}
	}
	rs.m[id] = lr
	return ctx, lr, func() {
		rs.mu.Lock()
		delete(rs.m, id)
		rs.mu.Unlock()
		cancel(nil)
		close(lr.done)
	}
}

func (rs *runs) get(id string) *liveRun {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.m[id]
}

// cancelResponse answers POST /v1/responses/{id}/cancel. If the user's response
// runs in this process, its run stops, and what it saved stays. A background
// response run by [Options.Background] is cancelled there from any replica,
// which then waits for its run to end and records it. The response then reads
// back as "cancelled". A response that has ended, or that another replica runs
// in its own process, cannot be cancelled here.
func (h *Handler) cancelResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	user := httpapi.User(r)
	requestID := w.Header().Get("X-Request-Id")
	resp, err := h.stored(r.Context(), user, id, requestID)
	if err != nil {
		h.refuse(w, r, err, "")
		return
	}
	lr := h.runs.get(id)
	switch {
	case lr != nil:
		lr.cancel(errCancelled)
	case resp.Status == "in_progress" && resp.Background && h.opts.Background != nil:
		if err := h.opts.Background.Cancel(r.Context(), id); err != nil { // it may have ended: its end is recorded
			h.opts.Logger.WarnContext(r.Context(), "robby: background run not cancelled", slog.String("request_id", requestID),
				slog.String("response_id", id), slog.Any("error", err))
		}
		lr = h.adopt(r.Context(), user, resp, requestID)
	}
	if lr == nil {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request",
			"Only a response whose run is in progress on this server can be cancelled.")
		return
	}
	select {
	case <-lr.done:
	case <-r.Context().Done():
		return
	}
	if resp, err = h.stored(r.Context(), user, id, requestID); err != nil {
		h.refuse(w, r, err, "")
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, resp)
}
