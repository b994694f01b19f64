package robbytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

// A Reply is a scripted answer to one request. Build one with [Text],
// [ToolCalls], [Error], [SSE], [SSEFile], [Func] or [Handler], then adjust it with
// its With methods.
type Reply struct {
	text      string
	pieces    []string // the text's streamed pieces, if not its words
	reasoning string
	calls     []ToolCall
	usage     [4]int // prompt, completion, cached prompt and reasoning tokens
	status    int
	body      string
	sse       string
	handler   http.HandlerFunc
	fn        func(Request) Reply
	delay     time.Duration // between streamed events
}

// Text is a reply whose answer is text. Streamed, it comes word by word.
func Text(s string) Reply {
	return Reply{text: s, usage: [4]int{10, len(strings.Fields(s))}}
}

// Pieces is a reply whose answer is the pieces joined. Streamed, each
// piece is a chunk of its own, however it cuts words or characters.
func Pieces(pieces ...string) Reply {
	r := Text(strings.Join(pieces, ""))
	r.pieces = pieces
	return r
}

// ToolCalls is a reply that calls tools, in order. A call with no ID gets one.
// Streamed, each call comes as OpenAI sends it. Its id and name come in a first
// delta, then its arguments in fragments.
func ToolCalls(calls ...ToolCall) Reply {
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = fmt.Sprintf("call_%d_%s", i, calls[i].Name)
		}
	}
	return Reply{calls: calls, usage: [4]int{10, 5 * len(calls)}}
}

// Error is a reply with an HTTP error status and a body sent as it is. As with
// providers, it may be a JSON error envelope, plain text or an HTML page.
func Error(status int, body string) Reply {
	return Reply{status: status, body: body}
}

// SSE is a reply whose streamed body is raw, sent byte for byte in small writes.
// It replays a provider's transcript.
func SSE(raw string) Reply {
	return Reply{sse: raw}
}

// SSEFile is [SSE] with the body read from a file, such as a transcript
// under testdata. It panics if the file cannot be read, as a test would
// fail anyway.
func SSEFile(path string) Reply {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(fmt.Sprintf("robbytest: %v", err))
	}
	return SSE(string(b))
}

// Handler is a reply written by h, for anything the other replies cannot
// script: a stall, a dropped connection, a retry header.
func Handler(h http.HandlerFunc) Reply {
	return Reply{handler: h}
}

// Func is a reply that f makes from the request, for answers that depend
// on it: an echo of the last message, say.
func Func(f func(Request) Reply) Reply {
	return Reply{fn: f}
}

// WithText adds text before the tool calls of r.
func (r Reply) WithText(s string) Reply { r.text = s; return r }

// WithReasoning adds reasoning before the answer, sent as DeepSeek and
// llama.cpp do, in reasoning_content.
func (r Reply) WithReasoning(s string) Reply { r.reasoning = s; return r }

// WithUsage sets the token counts the reply reports; on a [Func] reply,
// those of the reply it makes.
func (r Reply) WithUsage(prompt, completion int) Reply {
	r.usage[0], r.usage[1] = prompt, completion
	return r
}

// WithUsageDetails sets the parts of the reply's tokens that OpenAI reports apart.
// They are the cached prompt tokens (prompt_tokens_details.cached_tokens) and the
// reasoning tokens (completion_tokens_details.reasoning_tokens). They are parts of
// the prompt and completion tokens of [Reply.WithUsage].
func (r Reply) WithUsageDetails(cached, reasoning int) Reply {
	r.usage[2], r.usage[3] = cached, reasoning
	return r
}

// WithDelay makes a streamed reply pause for d before each event.
func (r Reply) WithDelay(d time.Duration) Reply { r.delay = d; return r }

// ServeHTTP writes r as the answer to req. A [Handler] reply can so wrap a
// scripted one, to delay it or add headers, say.
func (r Reply) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	parsed, err := readRequest(req)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	r.serve(w, req, &parsed)
}

func (r *Reply) serve(w http.ResponseWriter, req *http.Request, parsed *Request) {
	switch {
	case r.fn != nil:
		next := r.fn(*parsed)
		if r.usage != [4]int{} {
			next.usage = r.usage // set by WithUsage on the Func reply
		}
		next.serve(w, req, parsed)
	case r.handler != nil:
		r.handler(w, req)
	case r.status != 0:
		if json.Valid([]byte(r.body)) {
			w.Header().Set("Content-Type", "application/json")
		} else if strings.HasPrefix(strings.TrimSpace(r.body), "<") {
			w.Header().Set("Content-Type", "text/html")
		} else {
			w.Header().Set("Content-Type", "text/plain")
		}
		w.WriteHeader(r.status)
		io.WriteString(w, r.body)
	case r.sse != "":
		writeSSEHeader(w)
		for rest := r.sse; rest != ""; {
			n := min(len(rest), 64)
			io.WriteString(w, rest[:n])
			flush(w)
			rest = rest[n:]
		}
	case parsed.Stream:
		r.stream(w, req, parsed)
	default:
		r.plain(w, parsed)
	}
}

func (r *Reply) usageJSON() map[string]any {
	u := map[string]any{"prompt_tokens": r.usage[0], "completion_tokens": r.usage[1], "total_tokens": r.usage[0] + r.usage[1]}
	if r.usage[2] != 0 || r.usage[3] != 0 {
		u["prompt_tokens_details"] = map[string]int{"cached_tokens": r.usage[2]}
		u["completion_tokens_details"] = map[string]int{"reasoning_tokens": r.usage[3]}
	}
	return u
}

func (r *Reply) finishReason() string {
	if len(r.calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func (r *Reply) plain(w http.ResponseWriter, req *Request) {
	msg := map[string]any{"role": "assistant", "content": r.text}
	if r.reasoning != "" {
		msg["reasoning_content"] = r.reasoning
	}
	if len(r.calls) > 0 {
		if r.text == "" {
			msg["content"] = nil
		}
		var calls []map[string]any
		for _, c := range r.calls {
			calls = append(calls, callJSON(c, -1, c.Arguments))
		}
		msg["tool_calls"] = calls
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-robbytest", "object": "chat.completion", "created": created, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": r.finishReason()}},
		"usage":   r.usageJSON(),
	})
}

func callJSON(c ToolCall, index int, args string) map[string]any {
	m := map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": args}}
	if index >= 0 {
		m["index"] = index
	}
	for k, v := range c.Extra {
		m[k] = v
	}
	return m
}

func (r *Reply) stream(w http.ResponseWriter, req *http.Request, parsed *Request) {
	writeSSEHeader(w)
	send := func(delta map[string]any, finish any) bool {
		if r.delay > 0 {
			select {
			case <-time.After(r.delay):
			case <-req.Context().Done():
				return false
			}
		}
		writeEvent(w, chunk(parsed.Model, []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}, nil))
		return req.Context().Err() == nil
	}
	if !send(map[string]any{"role": "assistant", "content": ""}, nil) {
		return
	}
	for _, piece := range words(r.reasoning) {
		if !send(map[string]any{"reasoning_content": piece}, nil) {
			return
		}
	}
	pieces := r.pieces
	if pieces == nil {
		pieces = words(r.text)
	}
	for _, piece := range pieces {
		if !send(map[string]any{"content": piece}, nil) {
			return
		}
	}
	for i, c := range r.calls {
		if !send(map[string]any{"tool_calls": []any{callJSON(c, i, "")}}, nil) {
			return
		}
		for _, frag := range fragments(c.Arguments, 8) {
			if !send(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": frag}}}}, nil) {
				return
			}
		}
	}
	if !send(map[string]any{}, r.finishReason()) {
		return
	}
	if strings.Contains(string(parsed.Body), `"include_usage":true`) {
		writeEvent(w, chunk(parsed.Model, []any{}, r.usageJSON()))
	}
	io.WriteString(w, "data: [DONE]\n\n")
	flush(w)
}

func chunk(model string, choices []any, usage any) map[string]any {
	return map[string]any{"id": "chatcmpl-robbytest", "object": "chat.completion.chunk", "created": created,
		"model": model, "choices": choices, "usage": usage}
}

// words splits s into pieces that each keep their trailing space, so that
// the pieces joined give s back.
func words(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// fragments cuts s into pieces of about n bytes, never inside a UTF-8
// character.
func fragments(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := n
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func writeSSEHeader(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

func writeEvent(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "data: %s\n\n", b)
	flush(w)
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// Secret is what [LateSecret] gives: a key the guards of the tests redact.
const Secret = "sk-Zq8VwX2rT5yU7iO9pA1sD3fG"

// LateSecret is a long answer that gives [Secret] late, in pieces of one to
// three bytes, as a model that streams it would: a redaction must hold it
// back across chunks.
func LateSecret() Reply {
	pieces := strings.SplitAfter(strings.Repeat("All is well here. ", 40), " ")
	pieces = append(pieces, "Your key is ")
	for s := Secret; s != ""; {
		n := min(len(s), 1+len(s)%3)
		pieces, s = append(pieces, s[:n]), s[n:]
	}
	return Pieces(append(pieces, " and nothing else.")...)
}

// Leaks reports whether text holds any n characters in a row of [Secret]:
// what a redaction must never let through. Where text holds random IDs, of
// letters and digits as the secret is, 5 keeps chance matches out.
func Leaks(text string, n int) bool {
	for i := 0; i+n <= len(Secret); i++ {
		if strings.Contains(text, Secret[i:i+n]) {
			return true
		}
	}
	return false
}
