package openaiserver

import (
	"net/http"

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
