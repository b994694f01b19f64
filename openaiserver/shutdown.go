package openaiserver

import (
	"context"
	"errors"
	"net/http"

	"github.com/robby-go/robby/internal/httpapi"
)

// A server that stops cancels the requests still running at the end of its
// drain with cause [http.ErrServerClosed]: through [http.Server.BaseContext],
// a context cancelled by context.WithCancelCause. Their runs stop, the stored
// response is "cancelled", and the client, still there, reads why.

// shutdownMsg is what a client reads of an answer the server's stop cut.
const shutdownMsg = "The server shut down before this answer ended; ask again. A kept response is stored as it was, cancelled."

// shuttingDown reports whether ctx ended because the server shut down.
func shuttingDown(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), http.ErrServerClosed)
}

// shutDown ends a response the server's stop cut. A plain reply gets a 503. A
// stream closes its open message, then gets an error event.
func (rr *responsesReply) shutDown() {
	rr.resp.Status = "cancelled"
	if !rr.started {
		writeAPIError(rr.w, http.StatusServiceUnavailable, "server_error", "server_shutdown", shutdownMsg)
		return
	}
	rr.closeText()
	rr.event(wireEvent{Type: "error", Code: "server_shutdown", Message: shutdownMsg})
}

// shutDown ends a chat completion the server's stop cut: with a 503 while
// nothing was written, else with an error chunk.
func (cr *chatReply) shutDown() {
	if !cr.started {
		writeAPIError(cr.w, http.StatusServiceUnavailable, "server_error", "server_shutdown", shutdownMsg)
		return
	}
	code := "server_shutdown"
	cr.event(map[string]any{"error": httpapi.ErrorBody{Message: shutdownMsg, Type: "server_error", Code: &code}})
}
