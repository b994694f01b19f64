package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/robby-go/robby/internal/chattext"
)

// toolMark in a prompt makes the model call the lookup tool before it answers.
const toolMark = "(look it up)"

// A model is the scripted chat-completions server: every answer streams in
// chunks events spread over latency. It keeps the time it spent on each
// turn's calls, keyed by the turn's key, which its prompt starts with.
type model struct {
	chunks  int
	latency time.Duration

	mu    sync.Mutex
	spent map[string]time.Duration
}

func newModel(chunks int, latency time.Duration) *model {
	return &model{chunks: chunks, latency: latency, spent: map[string]time.Duration{}}
}

// took returns the time the model spent on the calls of the turn key, and
// forgets it.
func (m *model) took(key string) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.spent[key]
	delete(m.spent, key)
	return d
}

// turnKey is the key a prompt starts with: "[u3 t2]".
func turnKey(prompt string) string {
	key, _, _ := strings.Cut(prompt, " question")
	return key
}

// answer is the text the model answers a turn with. After the lookup tool's
// result, it quotes it.
func answer(key, lookup string, words int) string {
	var b strings.Builder
	b.WriteString("Answer to " + key)
	if lookup != "" {
		b.WriteString(" (" + lookup + ")")
	}
	b.WriteString(":")
	for i := range words {
		fmt.Fprintf(&b, " w%d", i)
	}
	return b.String()
}

// lookupResult is what the lookup tool returns for a turn.
func lookupResult(key string) string { return "looked up " + key }

type chatRequest struct {
	Messages []chattext.Message `json:"messages"`
	Stream   bool               `json:"stream"`
}

func (m *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[{"id":"load","object":"model","created":0,"owned_by":"load"}]}`)
		return
	}
	var req chatRequest
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 || !req.Stream {
		http.Error(w, "load: a streamed chat completion with messages, please", http.StatusBadRequest)
		return
	}
	var prompt string
	for _, msg := range req.Messages {
		if msg.Role == "user" {
			prompt = msg.Text()
		}
	}
	key, last := turnKey(prompt), req.Messages[len(req.Messages)-1]
	w.Header().Set("Content-Type", "text/event-stream")
	s := &sse{w: w, every: m.latency / time.Duration(m.chunks), id: "chatcmpl-" + strings.Trim(key, "[]")}
	// Counted before the last event: the client may ask for the figure as
	// soon as it has it.
	s.last = func() {
		m.mu.Lock()
		m.spent[key] += time.Since(start)
		m.mu.Unlock()
	}
	switch {
	case last.Role == "user" && strings.Contains(prompt, toolMark):
		s.toolCall(m.chunks, "call_"+strings.ReplaceAll(strings.Trim(key, "[]"), " ", "_"), key)
	case last.Role == "tool":
		s.text(m.chunks, answer(key, last.Text(), m.chunks))
	default:
		s.text(m.chunks, answer(key, "", m.chunks))
	}
}

// sse writes chat.completion.chunk events, one every every.
type sse struct {
	w     http.ResponseWriter
	every time.Duration
	id    string
	last  func() // called before the last event
}

func (s *sse) event(delta any, finish string) {
	time.Sleep(s.every)
	choice := map[string]any{"index": 0, "delta": delta, "finish_reason": nil}
	if finish != "" {
		choice["finish_reason"] = finish
	}
	b, _ := json.Marshal(map[string]any{"id": s.id, "object": "chat.completion.chunk", "created": 0, "model": "load",
		"choices": []any{choice}})
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	s.w.(http.Flusher).Flush()
}

func (s *sse) done() {
	b, _ := json.Marshal(map[string]any{"id": s.id, "object": "chat.completion.chunk", "created": 0, "model": "load",
		"choices": []any{}, "usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}})
	s.last()
	fmt.Fprintf(s.w, "data: %s\n\ndata: [DONE]\n\n", b)
	s.w.(http.Flusher).Flush()
}

// text streams answer in n chunks: a word or more each.
func (s *sse) text(n int, answer string) {
	words := strings.SplitAfter(answer, " ")
	for i := range n {
		from, to := i*len(words)/n, (i+1)*len(words)/n
		delta := map[string]any{"content": strings.Join(words[from:to], "")}
		if i == 0 {
			delta["role"] = "assistant"
		}
		finish := ""
		if i == n-1 {
			finish = "stop"
		}
		s.event(delta, finish)
	}
	s.done()
}

// toolCall streams a call of lookup with key in n chunks: its name first,
// then its arguments in fragments.
func (s *sse) toolCall(n int, id, key string) {
	args, _ := json.Marshal(map[string]string{"key": key})
	call := func(fields map[string]any) map[string]any {
		return map[string]any{"tool_calls": []any{fields}}
	}
	first := call(map[string]any{"index": 0, "id": id, "type": "function", "function": map[string]any{"name": "lookup", "arguments": ""}})
	first["role"] = "assistant"
	s.event(first, "")
	for i := range n - 1 {
		from, to := i*len(args)/(n-1), (i+1)*len(args)/(n-1)
		finish := ""
		if i == n-2 {
			finish = "tool_calls"
		}
		s.event(call(map[string]any{"index": 0, "function": map[string]any{"arguments": string(args[from:to])}}), finish)
	}
	s.done()
}
