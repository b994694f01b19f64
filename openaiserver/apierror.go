package openaiserver

import (
	"net/http"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/httpapi"
)

// writeAPIError writes an error in OpenAI's shape.
func writeAPIError(w http.ResponseWriter, status int, typ, code, msg string) {
	httpapi.WriteError(w, status, typ, code, "", msg)
}

// writeAPIErrorParam writes an error in OpenAI's shape that names the
// request parameter at fault.
func writeAPIErrorParam(w http.ResponseWriter, status int, typ, code, param, msg string) {
	httpapi.WriteError(w, status, typ, code, param, msg)
}

// limited reports whether err ended a run at the agent's turn limit or
// budget: the partial result is the reply, cut short.
func limited(err error) bool { return httpapi.Stopped(err, robby.ErrBudget, robby.ErrMaxTurns) != "" }

// runError returns the status, type, code and message of the error that
// ended a run: a guard's block is the client's request refused (400), any
// other failure the upstream's.
func runError(err error, requestID string) (status int, typ, code, msg string) {
	if msg, ok := httpapi.Blocked[*robby.GuardError](err); ok {
		return http.StatusBadRequest, "invalid_request_error", httpapi.GuardCode, msg
	}
	status, msg = httpapi.UpstreamError(err, requestID, apiError)
	return status, "upstream_error", "", msg
}

// apiError returns the status and message of the model endpoint's error.
func apiError(e *robby.APIError) (int, string) { return e.StatusCode, e.Message }
