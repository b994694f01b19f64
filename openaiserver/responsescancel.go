package openaiserver

import (
	"context"
	"errors"
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
// that ends it.
func (rs *runs) start(ctx context.Context, id string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	lr := &liveRun{cancel: cancel, done: make(chan struct{})}
	rs.mu.Lock()
	if rs.m == nil {
		rs.m = map[string]*liveRun{}
	}
	rs.m[id] = lr
	rs.mu.Unlock()
	return ctx, func() {
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
// runs in this process, its run stops, and what it saved stays. It then reads
// back as "cancelled". A response that has ended, or that another replica runs,
// cannot be cancelled here.
func (h *Handler) cancelResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	user := httpapi.User(r)
	if _, _, _, err := h.load(r.Context(), user, id); err != nil {
		h.refuse(w, r, err, "")
		return
	}
	lr := h.runs.get(id)
	if lr == nil {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request",
			"Only a response whose run is in progress on this server can be cancelled.")
		return
	}
	lr.cancel(errCancelled)
	select {
	case <-lr.done:
	case <-r.Context().Done():
		return
	}
	resp, err := h.stored(r.Context(), user, id)
	if err != nil {
		h.refuse(w, r, err, "")
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, resp)
}
