package robby

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
)

// DefaultMaxRequestBytes bounds the body of a request to a [Server].
const DefaultMaxRequestBytes = 8 << 20

// ServerOptions configures a [Server]. The zero value is a server with no
// authentication that shows no tool steps.
type ServerOptions struct {
	// Token, if set, is the bearer token every request must carry.
	Token string
	// MaxRequestBytes bounds a request's body (default
	// [DefaultMaxRequestBytes]); a larger one is answered 413.
	MaxRequestBytes int64
	// ShowToolSteps streams the agent's tool calls and results to the
	// client as reasoning, which chat front ends show apart from the
	// answer. Otherwise the client sees only the answer.
	ShowToolSteps bool
	// Logger receives one line per failed request. The default discards.
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
// A Server is safe for concurrent use.
type Server struct {
	agents map[string]*Agent
	opts   ServerOptions
	mux    *http.ServeMux
}

// NewServer serves agents under their model names. opts may be nil.
func NewServer(agents map[string]*Agent, opts *ServerOptions) *Server {
	s := &Server{agents: agents, mux: http.NewServeMux()}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.MaxRequestBytes <= 0 {
		s.opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
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

// ServeHTTP answers the request after checking its bearer token.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.opts.Token != "" {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.Token)) != 1 {
			writeAPIError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key",
				"Missing or incorrect bearer token.")
			return
		}
	}
	s.mux.ServeHTTP(w, r)
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

// chatRequest is what the server reads of a request itself; the rest goes
// to the model as the client sent it.
type chatRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []json.RawMessage `json:"messages"`
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxRequestBytes))
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
	var head chatRequest
	if err := json.Unmarshal(body, &head); err != nil {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", "Invalid JSON in the request body: "+err.Error())
		return
	}
	if len(head.Messages) == 0 {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "missing_messages", "'messages' is required and must not be empty.")
		return
	}
	agent, ok := s.agents[head.Model]
	if !ok {
		writeAPIError(w, http.StatusNotFound, "invalid_request_error", "model_not_found",
			fmt.Sprintf("The model '%s' does not exist.", head.Model))
		return
	}
	conv, opts, err := conversation(agent, body, len(head.Messages))
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", err.Error())
		return
	}
	reply := &chatReply{w: w, model: head.Model, id: "chatcmpl-" + randomAlnum(24), created: time.Now().Unix(),
		usage: head.StreamOptions.IncludeUsage, steps: s.opts.ShowToolSteps}
	if head.Stream {
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
		s.opts.Logger.WarnContext(r.Context(), "robby: chat completion failed", slog.String("model", head.Model), slog.Any("error", err))
		reply.fail(err)
	}
}

// conversation makes the fresh agent and run options of one request (whose
// messages array has the given length): the agent's system prompt, then
// the client's messages; the client's parameters laid over the agent's;
// the client's tools, run by the client.
func conversation(agent *Agent, body []byte, messages int) (*Agent, []RunOption, error) {
	var req openai.ChatCompletionNewParams
	if err := req.UnmarshalJSON(body); err != nil {
		return nil, nil, fmt.Errorf("invalid request: %v", err)
	}
	if len(req.Messages) != messages {
		return nil, nil, errors.New("messages holds something that is not a message")
	}
	for i, m := range req.Messages {
		if m.OfDeveloper == nil && m.OfSystem == nil && m.OfUser == nil && m.OfAssistant == nil && m.OfTool == nil && m.OfFunction == nil {
			return nil, nil, fmt.Errorf("messages[%d] is not a message with a known role", i)
		}
	}
	if err := answered(req.Messages); err != nil {
		return nil, nil, err
	}
	tools, err := clientTools(agent, req.Tools)
	if err != nil {
		return nil, nil, err
	}
	params, err := requestParams(req, body)
	if err != nil {
		return nil, nil, err
	}
	conv := agent.Clone()
	conv.Reset()
	conv.AddMessages(req.Messages...)
	return conv, []RunOption{WithRunParams(params), WithCallerTools(tools...)}, nil
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

// clientTools returns the definitions of the client's tools, which may not
// have the names of the agent's own.
func clientTools(agent *Agent, tools []openai.ChatCompletionToolUnionParam) ([]openai.FunctionDefinitionParam, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	own := map[string]bool{}
	for _, t := range agent.Tools() {
		own[t.Name()] = true
	}
	defs := make([]openai.FunctionDefinitionParam, 0, len(tools))
	for i, t := range tools {
		f := t.OfFunction
		switch {
		case f == nil:
			return nil, fmt.Errorf("tools[%d]: only function tools are supported", i)
		case own[f.Function.Name]:
			return nil, fmt.Errorf("tool %q has the name of one of the agent's own tools", f.Function.Name)
		}
		defs = append(defs, f.Function)
	}
	return defs, nil
}

// serverOwned are the request fields the server sets itself.
var serverOwned = []string{"model", "messages", "tools", "stream", "stream_options", "n"}

// requestParams returns the client's request parameters, req read from
// body. Parameters openai-go has no field for (a provider's own, such as
// top_k) are kept; one of a known name that does not fit its field is
// refused.
func requestParams(req openai.ChatCompletionNewParams, body []byte) (openai.ChatCompletionNewParams, error) {
	var client map[string]json.RawMessage
	if err := json.Unmarshal(body, &client); err != nil {
		return openai.ChatCompletionNewParams{}, err
	}
	for _, k := range serverOwned {
		delete(client, k)
	}
	p := req
	p.Messages, p.Tools, p.Model = nil, nil, ""
	p.StreamOptions, p.N = openai.ChatCompletionStreamOptionsParam{}, param.Opt[int64]{}
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
