package agui

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"go.opentelemetry.io/otel/propagation"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/httpapi"
)

// DefaultMaxRequestBytes bounds the body of a request to a [Handler].
const DefaultMaxRequestBytes = 8 << 20

// DefaultMaxMessages bounds the messages of a request to a [Handler].
const DefaultMaxMessages = 10_000

// Options configures a [Handler]. The zero value serves anyone (no
// token), keeps nothing, and answers no browser of another origin.
type Options struct {
	// Tokens are the bearer tokens a request may carry, each mapped to
	// the user it authenticates, whose threads it reaches. With none,
	// every request is of the user "". A request without a listed token
	// is answered 401.
	Tokens map[string]string
	// Store keeps each user's threads. Closing it is the caller's job.
	Store robby.Store
	// CORSOrigins are the web origins (or "*") whose pages may call the handler
	// from a browser. A request from another origin is answered 403. A page of
	// the server's own origin needs no listing. With no Tokens, that holds only
	// when the server is addressed by IP or as localhost.
	CORSOrigins []string
	// MaxRequestBytes bounds a request's body (default
	// [DefaultMaxRequestBytes]); a larger one is answered 413.
	MaxRequestBytes int64
	// MaxMessages bounds the messages of a request (default
	// [DefaultMaxMessages]); a request with more is answered 400.
	MaxMessages int
	// Logger receives one line per failed run, with the request id its
	// client was given. The default discards.
	Logger *slog.Logger
}

// A Handler serves an agent over AG-UI (see the package doc). Each run is
// a fresh [robby.Agent.Clone] of it. A Handler is safe for concurrent
// use; closing the agent is the caller's job.
type Handler struct {
	agent *robby.Agent
	opts  Options
	guard *httpapi.Guard
}

// New serves agent. opts is copied.
func New(agent *robby.Agent, opts Options) *Handler {
	guard := httpapi.Shared{Tokens: &opts.Tokens, CORSOrigins: &opts.CORSOrigins,
		MaxRequestBytes: &opts.MaxRequestBytes, MaxMessages: &opts.MaxMessages, Logger: &opts.Logger}.Fill()
	return &Handler{agent: agent, opts: opts, guard: guard}
}

// ServeHTTP runs the agent on a RunAgentInput, after checking the
// request's origin and token.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r, ok := h.guard.Admit(w, r)
	if !ok {
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		httpapi.WriteError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "",
			"An AG-UI run is started with POST.")
		return
	}
	body, ok := httpapi.ReadJSON(w, r, h.opts.MaxRequestBytes)
	if !ok {
		return
	}
	in, err := decodeInput(body, h.opts.MaxMessages)
	if err == nil {
		err = callerToolsFree(h.agent, in)
	}
	if err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", "", err.Error())
		return
	}
	// A traced agent's run joins the client's trace (traceparent).
	r = r.WithContext(h.agent.TraceContext(r.Context(), propagation.HeaderCarrier(r.Header)))
	events, err := h.start(r, in)
	if err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", "", err.Error())
		return
	}
	out := newStream(w, in.ThreadID, in.RunID)
	err = out.run(events)
	if err != nil && r.Context().Err() == nil && stopped(err) == "" {
		id := w.Header().Get("X-Request-Id")
		h.opts.Logger.WarnContext(r.Context(), "robby: AG-UI run failed", slog.String("request_id", id),
			slog.String("thread", in.ThreadID), slog.Any("error", err))
		out.fail(err, id)
	}
}

// callerToolsFree refuses front-end tools named as the agent's own.
func callerToolsFree(agent *robby.Agent, in *input) error {
	for _, t := range agent.Tools() {
		for _, c := range in.tools {
			if c.Name == t.Name() {
				return fmt.Errorf("the tool %q is the agent's own: a front-end tool needs another name", c.Name)
			}
		}
	}
	return nil
}

// errNoInput reports a stored thread's run given nothing new.
var errNoInput = errors.New("the last message must be the user's, or tool messages answering the last calls")
