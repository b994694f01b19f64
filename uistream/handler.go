package uistream

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
	// the user it authenticates, whose chats it reaches. With none, every
	// request is of the user "". A request without a listed token is
	// answered 401.
	Tokens map[string]string
	// Store keeps each user's chats. Closing it is the caller's job.
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

// A Handler serves an agent over the UI message stream protocol (see the
// package doc). Each request runs a fresh [robby.Agent.Clone] of it. A
// Handler is safe for concurrent use; closing the agent is the caller's
// job.
type Handler struct {
	agent *robby.Agent
	opts  Options
	guard *httpapi.Guard
	mux   *http.ServeMux
	chats chatLocks // one run at a time in a stored chat
}

// New serves agent. opts is copied.
func New(agent *robby.Agent, opts Options) *Handler {
	guard := httpapi.Shared{Tokens: &opts.Tokens, CORSOrigins: &opts.CORSOrigins,
		MaxRequestBytes: &opts.MaxRequestBytes, MaxMessages: &opts.MaxMessages, Logger: &opts.Logger}.Fill()
	h := &Handler{agent: agent, opts: opts, guard: guard, mux: http.NewServeMux()}
	h.mux.HandleFunc("POST /api/chat", h.chat)
	h.mux.HandleFunc("GET /api/chats", h.listChats)
	h.mux.HandleFunc("GET /api/chats/{id}", h.getChat)
	h.mux.HandleFunc("PATCH /api/chats/{id}", h.renameChat)
	h.mux.HandleFunc("DELETE /api/chats/{id}", h.deleteChat)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpapi.WriteError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "",
			fmt.Sprintf("Unknown request URL: %s %s", r.Method, r.URL.Path))
	})
	return h
}

// ServeHTTP answers the request after checking its origin and token.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r, ok := h.guard.Admit(w, r); ok {
		h.mux.ServeHTTP(w, r)
	}
}

// chat answers POST /api/chat: the chat's new message, run by the agent,
// streamed as UI message parts.
func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	body, ok := httpapi.ReadJSON(w, r, h.opts.MaxRequestBytes)
	if !ok {
		return
	}
	req, err := decodeRequest(body, h.opts.MaxMessages)
	if err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", "", err.Error())
		return
	}
	// A traced agent's run joins the client's trace (traceparent).
	r = r.WithContext(h.agent.TraceContext(r.Context(), propagation.HeaderCarrier(r.Header)))
	conv, prompt, opts, err := h.prepare(r, req)
	if err != nil {
		h.refuse(w, r, err)
		return
	}
	if h.opts.Store != nil {
		unlock, err := h.chats.lock(r.Context(), httpapi.User(r)+"\x00"+req.ID)
		if err != nil {
			return // the client is gone
		}
		defer unlock()
	}
	out := newStream(w)
	err = out.run(conv.Stream(r.Context(), prompt, opts...))
	if err != nil && r.Context().Err() == nil && stopped(err) == "" {
		id := w.Header().Get("X-Request-Id")
		h.opts.Logger.WarnContext(r.Context(), "robby: chat failed", slog.String("request_id", id),
			slog.String("chat", req.ID), slog.Any("error", err))
		out.fail(err, id)
	}
}

// prepare makes the run of a request: the agent's clone and the new prompt. The
// clone holds the client's history, or is bound to the stored chat.
func (h *Handler) prepare(r *http.Request, req *request) (*robby.Agent, string, []robby.RunOption, error) {
	conv := h.agent.Clone()
	if h.opts.Store == nil {
		conv.Reset()
		conv.AddMessages(req.history...)
		return conv, req.prompt, nil, nil
	}
	if !httpapi.ValidID(req.ID) {
		return nil, "", nil, errBadChatID
	}
	if req.trigger == "regenerate-message" {
		return nil, "", nil, errRegenerate
	}
	return conv, req.prompt, []robby.RunOption{robby.WithConversation(h.opts.Store, httpapi.User(r), req.ID)}, nil
}

var (
	errBadChatID  = errors.New("the chat's id must be 1 to 128 letters, digits, '-' or '_'")
	errRegenerate = errors.New("a stored chat keeps its answers: send a new message rather than regenerate one")
)

// refuse answers a request that failed before its run. A bad one gets 400, a
// chat that is not the user's 404. A store that failed gets 500, and is logged.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, errBadChatID), errors.Is(err, errRegenerate):
		httpapi.WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", "", err.Error())
	case errors.Is(err, robby.ErrNoConversation):
		httpapi.WriteError(w, http.StatusNotFound, "invalid_request_error", "not_found", "",
			fmt.Sprintf("Chat '%s' not found.", r.PathValue("id")))
	default:
		id := w.Header().Get("X-Request-Id")
		h.opts.Logger.ErrorContext(r.Context(), "robby: chat store failed", slog.String("request_id", id), slog.Any("error", err))
		httpapi.WriteError(w, http.StatusInternalServerError, "server_error", "", "",
			fmt.Sprintf("The server could not reach its store of chats (request id %s); the server's log has the details.", id))
	}
}
