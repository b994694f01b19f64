package robby

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
)

// DefaultMaxRequestBytes bounds the body of a request to a [Server].
const DefaultMaxRequestBytes = 8 << 20

// DefaultMaxMessages bounds the messages of a request to a [Server].
const DefaultMaxMessages = 10_000

// ServerOptions configures a [Server]. The zero value is a server with no
// authentication that shows no tool steps and answers no browser of
// another origin.
type ServerOptions struct {
	// Token, if set, is the bearer token every request must carry.
	Token string
	// MaxRequestBytes bounds a request's body (default
	// [DefaultMaxRequestBytes]); a larger one is answered 413.
	MaxRequestBytes int64
	// MaxMessages bounds the messages of a request (default
	// [DefaultMaxMessages]); a request with more is answered 400.
	MaxMessages int
	// CORSOrigins are the web origins (such as "https://chat.example.com",
	// or "*" for any) whose pages may call the server from a browser. A
	// request that carries an Origin header not listed is answered 403:
	// without it, any web page its user visits could drive the agent.
	CORSOrigins []string
	// ShowToolSteps streams the agent's tool calls and results to the
	// client as reasoning, which chat front ends show apart from the
	// answer. Otherwise the client sees only the answer.
	ShowToolSteps bool
	// Logger receives one line per failed request, with the request id
	// its client was given. The default discards.
	Logger *slog.Logger
}

// A Server is an OpenAI-compatible chat-completions endpoint whose models
// are agents: any chat front end or OpenAI SDK can talk to them, while
// their tools run on the server. Build one with [NewServer] and mount it
// on an [http.Server] or a mux; it serves
//
//	POST /v1/chat/completions
//	GET  /v1/models
//
// Each request is a conversation of its own: the client sends the messages,
// and the agent named by the request's model runs its whole loop over them
// with its tools, in a fresh [Agent.Clone] that shares nothing else with
// other requests. The request's parameters (temperature, max_tokens, stop,
// seed, ...) override the agent's. Function tools the client sends are
// offered to the model next to the agent's; when the model calls one of
// them, the call is handed back to the client (finish_reason "tool_calls"),
// as OpenAI would. A client that goes away cancels its run and its tools.
//
// A request must say that its body is JSON (Content-Type:
// application/json), or it is answered 415 and nothing runs: a web page
// can post a form to any address, but not JSON. Every answer carries an
// X-Request-Id header; when the run fails for a reason other than the
// model endpoint's own error, the client is told only that id, and the
// details go to the logger under it.
//
// A Server is safe for concurrent use.
type Server struct {
	agents map[string]*Agent
	opts   ServerOptions
	mux    *http.ServeMux
}

// NewServer serves agents under their model names (the map is copied).
// opts may be nil.
func NewServer(agents map[string]*Agent, opts *ServerOptions) *Server {
	s := &Server{agents: maps.Clone(agents), mux: http.NewServeMux()}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.MaxRequestBytes <= 0 {
		s.opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if s.opts.MaxMessages <= 0 {
		s.opts.MaxMessages = DefaultMaxMessages
	}
	s.opts.CORSOrigins = slices.Clone(s.opts.CORSOrigins)
	if s.opts.Logger == nil {
		s.opts.Logger = slog.New(slog.DiscardHandler)
	}
	s.mux.HandleFunc("POST /v1/chat/completions", s.chatCompletions)
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeAPIError(w, http.StatusNotFound, "invalid_request_error", "unknown_url",
			fmt.Sprintf("Unknown request URL: %s %s", r.Method, r.URL.Path))
	})
	return s
}

// ServeHTTP answers the request after checking its origin and its bearer
// token.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Request-Id", "req_"+randomAlnum(24))
	if origin := r.Header.Get("Origin"); origin != "" {
		if !s.allowOrigin(w, r, origin) {
			return
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			w.WriteHeader(http.StatusNoContent) // a preflight, answered without a token
			return
		}
	}
	if s.opts.Token != "" && !bearer(r.Header.Get("Authorization"), s.opts.Token) {
		writeAPIError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key",
			"Missing or incorrect bearer token.")
		return
	}
	s.mux.ServeHTTP(w, r)
}

// bearer reports whether an Authorization header carries token. The
// scheme's name is case-insensitive (RFC 9110, section 11.1).
func bearer(header, token string) bool {
	scheme, got, ok := strings.Cut(strings.TrimSpace(header), " ")
	return ok && strings.EqualFold(scheme, "Bearer") &&
		subtle.ConstantTimeCompare([]byte(strings.TrimLeft(got, " ")), []byte(token)) == 1
}

// allowOrigin gives a browser of a listed origin CORS permission, or
// answers 403 and returns false.
func (s *Server) allowOrigin(w http.ResponseWriter, r *http.Request, origin string) bool {
	h := w.Header()
	h.Add("Vary", "Origin")
	if !slices.Contains(s.opts.CORSOrigins, origin) && !slices.Contains(s.opts.CORSOrigins, "*") {
		writeAPIError(w, http.StatusForbidden, "invalid_request_error", "origin_not_allowed",
			fmt.Sprintf("Requests from the web origin %q are not allowed: the server's operator can list it (robby serve -cors).", origin))
		return false
	}
	h.Set("Access-Control-Allow-Origin", origin)
	if r.Method == http.MethodOptions {
		h.Set("Access-Control-Allow-Methods", "GET, POST")
		if asked := r.Header.Get("Access-Control-Request-Headers"); asked != "" {
			h.Set("Access-Control-Allow-Headers", asked)
		}
		h.Set("Access-Control-Max-Age", "600")
		h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
	}
	return true
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	names := make([]string, 0, len(s.agents))
	for name := range s.agents {
		names = append(names, name)
	}
	slices.Sort(names)
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: make([]model, 0, len(names))}
	for _, name := range names {
		list.Data = append(list.Data, model{ID: name, Object: "model", OwnedBy: "robby"})
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	if !isJSON(r.Header.Get("Content-Type")) {
		writeAPIError(w, http.StatusUnsupportedMediaType, "invalid_request_error", "unsupported_media_type",
			"The request body must be JSON, sent with Content-Type: application/json.")
		return
	}
	body, err := readBody(w, r, s.opts.MaxRequestBytes)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeAPIError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
				fmt.Sprintf("Request body is larger than %d bytes.", tooBig.Limit))
			return
		}
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "", "Could not read the request body: "+err.Error())
		return
	}
	req, err := decodeChatRequest(body, s.opts.MaxMessages)
	var bad *badRequest
	if errors.As(err, &bad) {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", bad.code, bad.msg)
		return
	}
	agent, ok := s.agents[req.model]
	if !ok {
		writeAPIError(w, http.StatusNotFound, "invalid_request_error", "model_not_found",
			fmt.Sprintf("The model '%s' does not exist.", req.model))
		return
	}
	conv, opts, err := conversation(agent, req)
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", err.Error())
		return
	}
	reply := &chatReply{w: w, model: req.model, id: "chatcmpl-" + randomAlnum(24), created: time.Now().Unix(),
		usage: req.includeUsage, steps: s.opts.ShowToolSteps}
	if req.stream {
		err = reply.stream(conv.ResumeStream(r.Context(), opts...))
	} else {
		var res *Result
		res, err = conv.Resume(r.Context(), opts...)
		if err == nil || errors.Is(err, ErrMaxTurns) {
			reply.complete(res, err)
			return
		}
	}
	if err != nil && r.Context().Err() == nil {
		id := w.Header().Get("X-Request-Id")
		s.opts.Logger.WarnContext(r.Context(), "robby: chat completion failed", slog.String("request_id", id),
			slog.String("model", req.model), slog.Any("error", err))
		reply.fail(err, id)
	}
}

// readBody reads a request's body, of at most limit bytes, into a buffer
// of the size it announces; one announced too large is not read.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 {
		buf.Grow(int(n) + 1) // +1: the read that sees the end
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	return buf.Bytes(), err
}

// isJSON reports whether a Content-Type says JSON.
func isJSON(contentType string) bool {
	t, _, err := mime.ParseMediaType(contentType)
	return err == nil && t == "application/json"
}

// conversation makes the fresh agent and run options of one request: the
// agent's system prompt, then the client's messages; the client's
// parameters laid over the agent's; the client's tools, run by the client.
func conversation(agent *Agent, req *chatRequest) (*Agent, []RunOption, error) {
	if err := answered(req.messages); err != nil {
		return nil, nil, err
	}
	if err := clientTools(agent, req.tools); err != nil {
		return nil, nil, err
	}
	params, err := requestParams(req.fields)
	if err != nil {
		return nil, nil, err
	}
	conv := agent.Clone()
	conv.Reset()
	conv.AddMessages(req.messages...)
	return conv, []RunOption{WithRunParams(params), WithCallerTools(req.tools...)}, nil
}

// answered checks that the tool calls of the last assistant message all
// have their results, as OpenAI requires, rather than have the agent give
// the model "no result" for them.
func answered(msgs []openai.ChatCompletionMessageParamUnion) error {
	results := map[string]bool{}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.OfTool != nil {
			results[m.OfTool.ToolCallID] = true
			continue
		}
		if m.OfAssistant != nil {
			for _, tc := range m.OfAssistant.ToolCalls {
				if id := tc.GetID(); id != nil && !results[*id] {
					return fmt.Errorf("messages[%d]: tool call %q has no tool message answering it", i, *id)
				}
			}
		}
		return nil
	}
	return nil
}

// clientTools checks that the client's tools do not have the names of the
// agent's own.
func clientTools(agent *Agent, defs []openai.FunctionDefinitionParam) error {
	if len(defs) == 0 {
		return nil
	}
	own := map[string]bool{}
	for _, t := range agent.Tools() {
		own[t.Name()] = true
	}
	for _, d := range defs {
		if own[d.Name] {
			return fmt.Errorf("tool %q has the name of one of the agent's own tools", d.Name)
		}
	}
	return nil
}

// serverOwned are the request fields the server sets itself.
var serverOwned = []string{"model", "messages", "tools", "stream", "stream_options", "n"}

// requestParams returns the client's request parameters, the members of
// the request but those the server sets itself. Parameters openai-go has
// no field for (a provider's own, such as top_k) are kept; one of a known
// name that does not fit its field is refused.
func requestParams(fields map[string]json.RawMessage) (openai.ChatCompletionNewParams, error) {
	client := maps.Clone(fields)
	for k := range client {
		// In any case: a Go upstream reads "Stream" as "stream".
		if slices.ContainsFunc(serverOwned, func(o string) bool { return strings.EqualFold(k, o) }) {
			delete(client, k)
		}
	}
	b, err := json.Marshal(client)
	if err != nil {
		return openai.ChatCompletionNewParams{}, err
	}
	var p openai.ChatCompletionNewParams
	if err := p.UnmarshalJSON(b); err != nil {
		return openai.ChatCompletionNewParams{}, fmt.Errorf("invalid request parameters: %v", err)
	}
	return p, keepUnread(&p, client)
}

// keepUnread checks that every parameter survived decoding into p, which
// drops both unknown names and values of the wrong type: the first are
// kept as extra fields, the second refused.
func keepUnread(p *openai.ChatCompletionNewParams, params map[string]json.RawMessage) error {
	b, err := p.MarshalJSON()
	if err != nil {
		return fmt.Errorf("invalid request parameters: %v", err)
	}
	var read map[string]json.RawMessage
	if err := json.Unmarshal(b, &read); err != nil {
		return err
	}
	extra := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if _, ok := read[k]; ok || string(params[k]) == "null" {
			continue
		}
		switch {
		case k == "":
			return errors.New("invalid request parameters: a parameter has no name")
		case paramNames()[k]:
			return fmt.Errorf("invalid request parameters: %q is not of the type the API defines: %s", k, params[k])
		}
		extra[k] = params[k]
	}
	if len(extra) > 0 {
		p.SetExtraFields(extra)
	}
	return nil
}

// paramNames are the names of the request parameters openai-go knows.
var paramNames = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	t := reflect.TypeFor[openai.ChatCompletionNewParams]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			names[name] = true
		}
	}
	return names
})
