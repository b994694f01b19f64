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

// apiError returns the status and message of the model endpoint's error.
func apiError(e *robby.APIError) (int, string) { return e.StatusCode, e.Message }
