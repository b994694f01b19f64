package openaiserver

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/httpapi"
)

// DefaultMaxRequestBytes bounds the body of a request to a [Handler].
const DefaultMaxRequestBytes = 8 << 20

// DefaultMaxMessages bounds the messages of a request to a [Handler].
const DefaultMaxMessages = 10_000

// DefaultHeartbeat is how often, by default, a [Handler] notes in its store that
// a stored response's run goes on.
const DefaultHeartbeat = 10 * time.Second

// Options configures a [Handler]. The zero value is an endpoint with no
// authentication and no store. It shows no tool steps and answers no browser of
// another origin.
type Options struct {
	// Tokens are the bearer tokens a request may carry ("Authorization: Bearer
	// <token>", the scheme in any case). Each maps to the user it authenticates:
	// the one whose stored responses it may read and continue. Several tokens
	// may map to one user. With none, no token is asked for and every request is
	// of the user "". A request without a listed token is answered 401.
	Tokens map[string]string
	// Store keeps the responses of POST /v1/responses, each a conversation of
	// the user who made it. A client can then continue one
	// (previous_response_id), read it or delete it. It also keeps the
	// Conversations API's conversations. Without a store, responses are not
	// kept: previous_response_id and conversation are refused, GET and DELETE
	// find nothing, and /v1/conversations is refused. Closing the store is the
	// caller's job.
	Store robby.Store
	// Heartbeat is how often a stored response's run notes in the store that it
	// goes on (default [DefaultHeartbeat]). A response may still read
	// "in_progress" after three heartbeats with no write to its conversation.
	// Its server then stopped during its run (it crashed, or lost its store),
	// and GET reads it "failed". A background response run by Background is
	// not: another replica takes it over. Replicas sharing a store should
	// share the setting.
	Heartbeat time.Duration
	// MaxRequestBytes bounds a request's body (default
	// [DefaultMaxRequestBytes]); a larger one is answered 413.
	MaxRequestBytes int64
	// MaxMessages bounds the messages of a chat completion and the input items
	// of a response (default [DefaultMaxMessages]). A request with more is
	// answered 400.
	MaxMessages int
	// CORSOrigins are the web origins whose pages may call the endpoint from a
	// browser, such as "https://chat.example.com", or "*" for any. A request
	// with an Origin header not listed is answered 403. Without this check, any
	// web page its user visits could drive the agent. A page of the server's own
	// origin needs no listing. With no Tokens, that holds only when the server
	// is addressed by IP or as localhost. A DNS name pointed at it must not pass
	// for it.
	CORSOrigins []string
	// ShowToolSteps streams the agent's tool calls and results to a chat
	// completion's client as reasoning. Chat front ends show reasoning apart
	// from the answer. Otherwise, and always in a response, the client sees only
	// the answer.
	ShowToolSteps bool
	// Background, if set, runs the background responses ("background": true)
	// outside the handler's process. Durable workflows can so outlive it (see
	// ResponsesRunner in github.com/robby-go/robby/temporal). The handler waits
	// for each run's result and saves its messages. It records how the run
	// ended, as for a run of its own. If the handler stops first (it crashed,
	// or was closed), the run goes on. Then any handler sharing the store and
	// the runner takes it over, on a GET or a cancel of the response, once
	// three heartbeats passed without a write. It waits for the run, saves its
	// messages once, and records its end. Cancel on any replica cancels the run.
	Background BackgroundRunner
	// Logger receives one line per failed request, with the request id
	// its client was given. The default discards.
	Logger *slog.Logger
}

// A Handler is an OpenAI-compatible endpoint whose models are agents. Any chat
// front end or OpenAI SDK can talk to them, while their tools run on the server.
// Build one with [New] and mount it on an [http.Server] or a mux. It serves
//
//	POST   /v1/chat/completions
//	GET    /v1/models
//	POST   /v1/responses
//	GET    /v1/responses/{id}
//	DELETE /v1/responses/{id}
//	GET    /v1/responses/{id}/input_items
//	POST   /v1/responses/{id}/cancel
//	POST   /v1/conversations
//	GET    /v1/conversations/{id}
//	POST   /v1/conversations/{id}
//	DELETE /v1/conversations/{id}
//	GET    /v1/conversations/{id}/items
//	POST   /v1/conversations/{id}/items
//	GET    /v1/conversations/{id}/items/{item_id}
//	DELETE /v1/conversations/{id}/items/{item_id}
//
// A chat completion is a conversation of its own: the client sends the messages.
// The agent the request's model names runs its whole loop over them, with its
// tools. It runs in a fresh [robby.Agent.Clone] that shares nothing else with
// other requests. The request's parameters (temperature, max_tokens, stop, seed,
// ...) override the agent's ([robby.WithRunParams]). Function tools the client
// sends are offered to the model next to the agent's ([robby.WithCallerTools]).
// When the model calls one of them, the call goes back to the client
// (finish_reason "tool_calls"), as OpenAI would.
//
// A response (the Responses API) is the same run, its input given as items. With
// a [robby.Store] in [Options.Store], the endpoint keeps it, unless the client
// says "store": false. It is kept as a conversation of the user the request's
// token authenticates. The next request then sends only its new input and names
// the response it continues (previous_response_id). A user never reads,
// continues or deletes another's responses: they are answered 404, as responses
// that do not exist. Each stored response holds its whole conversation.
// Continuing one copies it (in the store, [robby.Store.Fork]), so responses stay
// apart, as OpenAI's do. Each can be continued again, or deleted alone.
//
// A client that goes away cancels its run and its tools.
//
// A request must say that its body is JSON (Content-Type: application/json), or
// it is answered 415 and nothing runs. A web page can post a form to any
// address, but not JSON. Every answer carries an X-Request-Id header. When the
// run fails for a reason other than the model endpoint's own error, the client
// gets only that id. The details go to the logger under it.
//
// A response asked for with "background": true (and kept) is answered at once,
// "in_progress". It runs on in the handler's process, detached from its request.
// The client polls it with GET, and may cancel it (POST
// /v1/responses/{id}/cancel). [Handler.Close] stops those still running, but
// for those run by [Options.Background], which outlive it.
//
// A Handler is safe for concurrent use. Closing the agents is the caller's job,
// once the handler is done.
type Handler struct {
	agents map[string]*robby.Agent
	opts   Options
	mux    *http.ServeMux
	runs   runs // the stored responses running, for cancel
	guard  *httpapi.Guard
	bg     background
}

// New serves agents under their model names. The map and opts are copied:
// changing them afterwards does not change the handler.
func New(agents map[string]*robby.Agent, opts Options) *Handler {
	h := &Handler{agents: maps.Clone(agents), opts: opts, mux: http.NewServeMux()}
	h.bg.ctx, h.bg.stop = context.WithCancel(context.Background())
	if h.opts.Heartbeat <= 0 {
		h.opts.Heartbeat = DefaultHeartbeat
	}
	h.guard = httpapi.Shared{Tokens: &h.opts.Tokens, CORSOrigins: &h.opts.CORSOrigins,
		MaxRequestBytes: &h.opts.MaxRequestBytes, MaxMessages: &h.opts.MaxMessages, Logger: &h.opts.Logger}.Fill()
	h.mux.HandleFunc("POST /v1/chat/completions", h.chatCompletions)
	h.mux.HandleFunc("GET /v1/models", h.models)
	h.mux.HandleFunc("POST /v1/responses", h.createResponse)
	h.mux.HandleFunc("GET /v1/responses/{id}", h.getResponse)
	h.mux.HandleFunc("DELETE /v1/responses/{id}", h.deleteResponse)
	h.mux.HandleFunc("GET /v1/responses/{id}/input_items", h.inputItems)
	h.mux.HandleFunc("POST /v1/responses/{id}/cancel", h.cancelResponse)
	h.mux.HandleFunc("POST /v1/conversations", h.createConversation)
	h.mux.HandleFunc("GET /v1/conversations/{id}", h.getConversation)
	h.mux.HandleFunc("POST /v1/conversations/{id}", h.updateConversation)
	h.mux.HandleFunc("DELETE /v1/conversations/{id}", h.deleteConversation)
	h.mux.HandleFunc("GET /v1/conversations/{id}/items", h.listConversationItems)
	h.mux.HandleFunc("POST /v1/conversations/{id}/items", h.addConversationItems)
	h.mux.HandleFunc("GET /v1/conversations/{id}/items/{item}", h.getConversationItem)
	h.mux.HandleFunc("DELETE /v1/conversations/{id}/items/{item}", h.deleteConversationItem)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeAPIError(w, http.StatusNotFound, "invalid_request_error", "unknown_url",
			fmt.Sprintf("Unknown request URL: %s %s", r.Method, r.URL.Path))
	})
	return h
}

// ServeHTTP answers the request after checking its origin and its bearer
// token.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r, ok := h.guard.Admit(w, r); ok {
		h.mux.ServeHTTP(w, r)
	}
}

// models lists the agents' names, sorted.
func (h *Handler) models(w http.ResponseWriter, _ *http.Request) {
	names := slices.Sorted(maps.Keys(h.agents))
	list := wireModelList{Object: "list", Data: make([]wireModel, 0, len(names))}
	for _, name := range names {
		list.Data = append(list.Data, wireModel{ID: name, Object: "model", OwnedBy: "robby"})
	}
	httpapi.WriteJSON(w, http.StatusOK, list)
}

// agent returns the agent that model names. If that agent is traced, r gets the
// trace context its headers carry, so the run joins the client's trace (see
// [robby.Agent.TraceContext]). It answers 404 and returns nil when no agent has
// that name.
func (h *Handler) agent(w http.ResponseWriter, r *http.Request, model string) (*robby.Agent, *http.Request) {
	agent, ok := h.agents[model]
	if !ok {
		writeAPIError(w, http.StatusNotFound, "invalid_request_error", "model_not_found",
			fmt.Sprintf("The model '%s' does not exist.", model))
		return nil, r
	}
	if ctx := agent.TraceContext(r.Context(), propagation.HeaderCarrier(r.Header)); ctx != r.Context() {
		r = r.WithContext(ctx)
	}
	return agent, r
}

// readJSON reads the body of a request that says it is JSON, within the size
// limit. Otherwise it answers the error (415, 413, 400) and returns false.
func (h *Handler) readJSON(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	return httpapi.ReadJSON(w, r, h.opts.MaxRequestBytes)
}
