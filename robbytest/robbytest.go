// Package robbytest provides a scripted, OpenAI-compatible chat-completions
// server for testing agents offline.
//
// A [Server] answers each request with the next [Reply] in its queue, in the
// wire format real providers use. Plain requests get a chat.completion object.
// Streamed ones get chat.completion.chunk server-sent events ending in [DONE].
// It records every request, so tests can check what the agent sent. Once the
// queue is empty it answers with the [Server.Fallback] reply, if one is set.
// GET /v1/models lists [Model]. So any OpenAI client can be pointed at it. It
// also serves POST /v1/embeddings with a deterministic [Embedding], so
// retrieval is tested through a real client. After [Server.ServeAs], it answers
// the requests that tell llama.cpp, Ollama and vLLM apart.
//
//	srv := robbytest.NewServer()
//	defer srv.Close()
//	srv.Reply(
//		robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)),
//		robbytest.Text("1 + 2 = 3"),
//	)
//	agent, err := robby.New(robby.WithBaseURL(srv.URL), robby.WithModel("test"), ...)
package robbytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/robby-go/robby/internal/chattext"
	sjson "github.com/segmentio/encoding/json"
)

// A Server is a fake chat-completions endpoint on a local address. It is
// safe for concurrent use.
type Server struct {
	// URL is the base URL to give the client, ending in /v1.
	URL string

	srv      *httptest.Server
	mu       sync.Mutex
	replies  []Reply
	fallback *Reply // for a request that finds the queue empty
	requests []Request
	// embeddings are the inputs of each /v1/embeddings request.
	embeddings [][]string

	limit      int // the context window ContextLimit set, 0 if none
	limitShape string
	software   string // the server ServeAs plays; OpenAI's if empty
}

// Model is the model GET /v1/models lists. Requests may name any model.
const Model = "robbytest"

// NewServer starts a server with an empty queue. Close it when done.
func NewServer() *Server {
	s := new(Server)
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	return s
}

// Close shuts the server down, waiting for the requests in progress.
func (s *Server) Close() { s.srv.Close() }

// Client returns an HTTP client that talks to the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Reply queues replies; each request takes the first one left. A request
// that finds the queue empty gets a 500 error saying so.
func (s *Server) Reply(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// Fallback sets the reply for every request that finds the queue empty, from
// now on, instead of a 500 error. The server keeps answering once the script
// runs out. Any OpenAI client, or a person trying a program out, can talk to it
// for as long as they like. A [Func] reply can answer each request in its own
// way:
//
//	srv.Fallback(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
//		return robbytest.Text("You said: " + req.Messages[len(req.Messages)-1].Content)
//	}))
func (s *Server) Fallback(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = &r
}

// Pending returns how many queued replies no request has taken yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.replies)
}

// Requests returns the requests received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/models") {
		serveModels(w, r)
		return
	}
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/embeddings") {
		s.serveEmbeddings(w, r)
		return
	}
	if s.serveProbe(w, r) {
		return
	}
	req, err := readRequest(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(req.Body)) // for a Handler reply
	s.mu.Lock()
	s.requests = append(s.requests, req)
	if s.limit > 0 && req.Tokens > s.limit {
		limit, shape := s.limit, s.limitShape
		s.mu.Unlock()
		over := ContextLengthError(shape, req.Tokens, limit)
		over.serve(w, r, &req)
		return
	}
	var next *Reply
	if len(s.replies) > 0 {
		next = &s.replies[0]
		s.replies = s.replies[1:]
	} else if s.fallback != nil {
		next = new(Reply)
		*next = *s.fallback
	}
	limited := s.limit > 0
	s.mu.Unlock()
	if next == nil {
		// A test error, not a fault to retry: openai-go honours this header.
		w.Header().Set("X-Should-Retry", "false")
		writeError(w, http.StatusInternalServerError, "robbytest: no reply scripted for this request")
		return
	}
	if limited {
		reply := *next
		reply.usage[0] = req.Tokens
		next = &reply
	}
	next.serve(w, r, &req)
}

// A Request is a request the server received.
type Request struct {
	Path       string
	RemoteAddr string // the client's address: one per connection
	Header     http.Header
	Body       []byte // the JSON body as sent
	Model      string
	Stream     bool
	Messages   []Message
	Tools      []string // the names of the tools offered
	// Tokens estimates the prompt's tokens (messages and tools) as robby
	// does, for [Server.ContextLimit].
	Tokens int
	// ResponseFormat is the request's response_format as sent, nil when
	// it has none.
	ResponseFormat json.RawMessage
}

// A Message is a message of a [Request], reduced to what tests check.
type Message struct {
	Role       string
	Content    string // text parts joined
	ToolCalls  []ToolCall
	ToolCallID string // for role "tool"
}

// A ToolCall is a tool call in a reply or in an assistant message.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
	// Extra holds provider fields of the call, such as Gemini's
	// extra_content, as JSON.
	Extra map[string]json.RawMessage
}

// Call makes a tool call for [ToolCalls], with an id of the form OpenAI uses.
func Call(name, arguments string) ToolCall {
	return ToolCall{Name: name, Arguments: arguments}
}

// wireRequest is what the server reads of a request. It keeps the messages and
// tools as sent, for the token estimate, then decodes them one by one. The rest
// (response_format's schema, tools' parameters) is only skipped.
type wireRequest struct {
	Model          string            `json:"model"`
	Stream         bool              `json:"stream"`
	Messages       []json.RawMessage `json:"messages"`
	Tools          []json.RawMessage `json:"tools"`
	ResponseFormat json.RawMessage   `json:"response_format"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
		ExtraContent json.RawMessage `json:"extra_content"`
	} `json:"tool_calls"`
}

type wireTool struct {
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// readRequest reads a chat-completions request. encoding/json judges whether
// the body is JSON at all. segmentio/encoding decodes it in one pass, without
// copying the parts it only skips or measures. Every test of an agent goes
// through here. A request carries schemas of a few hundred bytes a tool and a
// typed answer.
func readRequest(r *http.Request) (Request, error) {
	raw, err := io.ReadAll(r.Body)
	if err == nil && !json.Valid(raw) {
		err = json.Unmarshal(raw, new(any)) // its error says where
	}
	var body wireRequest
	if err == nil {
		_, err = sjson.Parse(raw, &body, sjson.DontCopyRawMessage)
	}
	messages := make([]wireMessage, len(body.Messages))
	for i := 0; err == nil && i < len(messages); i++ {
		_, err = sjson.Parse(body.Messages[i], &messages[i], 0)
	}
	tools := make([]wireTool, len(body.Tools))
	for i := 0; err == nil && i < len(tools); i++ {
		_, err = sjson.Parse(body.Tools[i], &tools[i], 0)
	}
	if err != nil {
		return Request{}, fmt.Errorf("robbytest: request body: %v", err)
	}
	req := Request{Tokens: promptTokens(body.Messages, body.Tools), Path: r.URL.Path, RemoteAddr: r.RemoteAddr, Header: r.Header.Clone(),
		Body: raw, Model: body.Model, Stream: body.Stream, ResponseFormat: bytes.Clone(body.ResponseFormat)}
	for _, m := range messages {
		msg := Message{Role: m.Role, Content: chattext.Content(m.Content), ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			call := ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
			if len(tc.ExtraContent) > 0 {
				call.Extra = map[string]json.RawMessage{"extra_content": tc.ExtraContent}
			}
			msg.ToolCalls = append(msg.ToolCalls, call)
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, t := range tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}
	return req, nil
}

// serveModels answers GET /v1/models and GET /v1/models/{id}, with [Model].
// Clients call them to list or check models.
func serveModels(w http.ResponseWriter, r *http.Request) {
	model := map[string]any{"id": Model, "object": "model", "created": created, "owned_by": "robbytest"}
	switch {
	case r.URL.Path == "/v1/models":
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{model}})
	case r.URL.Path == "/v1/models/"+Model:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(model)
	case strings.HasPrefix(r.URL.Path, "/v1/models/"):
		writeError(w, http.StatusNotFound, fmt.Sprintf("robbytest: the model %q does not exist: the server lists %q",
			strings.TrimPrefix(r.URL.Path, "/v1/models/"), Model))
	default:
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "robbytest: "+r.URL.Path+" answers POST only")
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "robbytest_error"}})
	w.Write(b)
}

// created is the creation time of every reply (2026-01-01), fixed so that
// replies are the same from run to run.
const created = 1767225600
