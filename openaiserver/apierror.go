package openaiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/robby-go/robby"
)

// apiErrorBody is an error in OpenAI's shape, the member "error" of an
// error answer or of an error event in a stream.
type apiErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// writeAPIError writes an error in OpenAI's shape.
func writeAPIError(w http.ResponseWriter, status int, typ, code, msg string) {
	writeAPIErrorParam(w, status, typ, code, "", msg)
}

// writeAPIErrorParam writes an error in OpenAI's shape that names the
// request parameter at fault.
func writeAPIErrorParam(w http.ResponseWriter, status int, typ, code, param, msg string) {
	e := apiErrorBody{Message: msg, Type: typ}
	if code != "" {
		e.Code = &code
	}
	if param != "" {
		e.Param = &param
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// limited reports whether err ended a run at a limit of the agent's, the
// turn limit or its budget: the run's partial result is the reply, as a
// reply cut short, not an error.
func limited(err error) bool {
	return errors.Is(err, robby.ErrMaxTurns) || errors.Is(err, robby.ErrBudget)
}

// upstreamError returns the status and message that tell a client why a
// run failed. The model endpoint's own error is passed on; any other
// failure (the endpoint unreachable, a reply robby could not read) is
// reported by request id only, since its text names addresses the client
// has no business knowing.
func upstreamError(err error, requestID string) (status int, msg string) {
	var apiErr *robby.APIError
	if errors.As(err, &apiErr) {
		status = http.StatusBadGateway
		if apiErr.StatusCode >= 400 {
			status = apiErr.StatusCode
		}
		return status, "upstream: " + apiErr.Message
	}
	return http.StatusBadGateway,
		fmt.Sprintf("The agent could not get an answer from its model (request id %s); the server's log has the details.", requestID)
}
