package robbytest

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/robby-go/robby/internal/tokens"
)

// The providers whose context-length errors [ContextLengthError] writes.
const (
	OpenAI   = "openai"    // HTTP 400, code context_length_exceeded
	LlamaCpp = "llama.cpp" // HTTP 400, type exceed_context_size_error, with n_prompt_tokens and n_ctx
	Ollama   = "ollama"    // HTTP 400, llama.cpp's error as a string in Ollama's {"error": ...}
	VLLM     = "vllm"      // HTTP 400, {"object":"error", "message": "This model's maximum context length is ..."}
	Gemini   = "gemini"    // HTTP 400, Google's INVALID_ARGUMENT in an array, as its OpenAI endpoint sends it
)

// ContextLengthError is the error a provider answers to a request of requested
// tokens, when its context window holds limit. The body is as each sends it. It
// panics for a provider it does not know.
func ContextLengthError(provider string, requested, limit int) Reply {
	var body string
	switch provider {
	case OpenAI:
		body = fmt.Sprintf(`{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, limit, requested)
	case LlamaCpp:
		body = fmt.Sprintf(`{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":%d,"n_ctx":%d}}`, requested, limit)
	case Ollama:
		inner := fmt.Sprintf(`{"error":{"code":400,"message":"request (%d tokens) exceeds the available context size (%d tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":%d,"n_ctx":%d}}`, requested, limit, requested, limit)
		b, _ := json.Marshal(map[string]string{"error": inner})
		body = string(b)
	case VLLM:
		body = fmt.Sprintf(`{"object":"error","message":"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, 0 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`, limit, requested, requested)
	case Gemini:
		body = fmt.Sprintf(`[{"error":{"code":400,"message":"The input token count (%d) exceeds the maximum number of tokens allowed (%d).","status":"INVALID_ARGUMENT"}}]`, requested, limit)
	default:
		panic(fmt.Sprintf("robbytest: no context-length error known for %q", provider))
	}
	return Error(http.StatusBadRequest, body)
}

// ContextLimit makes the server play a model with a context window of limit
// tokens. A larger request gets provider's context-length error, without taking
// a scripted reply. Its size is its prompt's: its messages and tools, as robby
// estimates their tokens (see [Request].Tokens). The others take their replies,
// reporting their prompt's tokens as usage. (Replies made by [Func] report what
// the reply they make says.) A limit of 0 removes it.
func (s *Server) ContextLimit(limit int, provider string) {
	ContextLengthError(provider, 0, 0) // panics for an unknown provider
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit, s.limitShape = limit, provider
}

// promptTokens estimates the tokens of a request's messages and tools, as
// robby does.
func promptTokens(messages, tools []json.RawMessage) int {
	n := 3 // the reply's opening
	for _, raw := range messages {
		n += tokens.Count(raw)
	}
	for _, raw := range tools {
		n += tokens.Count(raw)
	}
	return n
}
