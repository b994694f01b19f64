package llmserver

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
)

// An Overflow is what a provider's context-length error says.
type Overflow struct {
	Tokens, Window int // 0 when the error does not say
}

// ParseOverflow recognises a provider's context-length error in its body
// (or message) and reads the sizes it gives.
func ParseOverflow(body string) (Overflow, bool) {
	lower := strings.ToLower(body)
	found := false
	for _, m := range contextMarks {
		if strings.Contains(lower, m) {
			found = true
			break
		}
	}
	if !found {
		return Overflow{}, false
	}
	return Overflow{Tokens: firstNumber(body, nPrompt, requestTokens), Window: Sane(firstNumber(body, nCtx, windowSizes))}, true
}

// The context windows a server's claim may give. A model runs with hundreds of
// tokens at the very least. A smaller claim (llama.cpp's n_ctx: 1) is no window:
// taken at its word, it would make every turn compact. None runs with more than
// MaxWindow.
const (
	MinWindow = 256
	MaxWindow = 1 << 24 // 16.8 million tokens
)

// Sane returns the window a server claims, within reason. A claim below
// MinWindow says nothing (0): the window is then learned from the
// provider's context-length errors. One above MaxWindow is MaxWindow.
func Sane(window int) int {
	if window < MinWindow {
		return 0
	}
	return min(window, MaxWindow)
}

// contextMarks are what each provider's context-length error holds. They are
// OpenAI's code and message, and llama.cpp's type and message (Ollama relays
// llama.cpp's error inside its own). Then come vLLM's, OpenRouter's and
// Mistral's message, Gemini's, Ollama's own, and Anthropic's OpenAI endpoint's.
var contextMarks = []string{
	"context_length_exceeded",
	"exceed_context_size_error",
	"exceeds the available context size",
	"maximum context length",
	"exceeds the maximum number of tokens allowed",
	"longer than the context length",
	"exceeds the context length",
	"exceeds the context window",
	"prompt is too long",
}

// The sizes in those errors: the window, then the request's tokens.
var (
	nCtx          = regexp.MustCompile(`n_ctx\\*"?\s*:\s*(\d+)`)
	nPrompt       = regexp.MustCompile(`n_prompt_tokens\\*"?\s*:\s*(\d+)`)
	windowSizes   = regexp.MustCompile(`(?i)maximum context length is (\d+)|available context size \((\d+) tokens\)|maximum number of tokens allowed \((\d+)\)|tokens > (\d+) maximum`)
	requestTokens = regexp.MustCompile(`(?i)resulted in (\d+) tokens|\((\d+) in the messages|has (\d+) input tokens|request \((\d+) tokens\)|input token count \((\d+)\)|too long: (\d+) tokens`)
)

// firstNumber returns the first number a pattern captures in s.
func firstNumber(s string, patterns ...*regexp.Regexp) int {
	for _, re := range patterns {
		m := re.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		for _, g := range m[1:] {
			if n, err := strconv.Atoi(g); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

// ollamaDefaultContext is the context Ollama runs a model with when its
// parameters set no num_ctx.
const ollamaDefaultContext = 4096

// OllamaWindow reads the context Ollama runs a model with. It is the num_ctx of
// its parameters, or Ollama's default, within the model's own length.
func OllamaWindow(parameters string, info map[string]json.RawMessage) int {
	native := 0
	for k, v := range info {
		if strings.HasSuffix(k, ".context_length") {
			native, _ = strconv.Atoi(string(v))
		}
	}
	for line := range strings.Lines(parameters) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "num_ctx" {
			if n, err := strconv.Atoi(f[1]); err == nil && n > 0 {
				return Sane(n)
			}
		}
	}
	return Sane(min(native, ollamaDefaultContext))
}

// knownWindows are the context windows of well-known hosted models, by
// the prefix of their names, longest first.
var knownWindows = []struct {
	prefix string
	window int
}{
	{"gpt-4.1", 1047576},
	{"gpt-4o", 128000},
	{"gpt-4-turbo", 128000},
	{"gpt-4", 8192},
	{"gpt-3.5-turbo", 16385},
	{"gpt-5", 400000},
	{"o1", 200000},
	{"o3", 200000},
	{"o4-mini", 200000},
	{"claude-", 200000},
	{"gemini-1.5-pro", 2097152},
	{"gemini-", 1048576},
	{"deepseek-", 65536},
	{"mistral-large", 131072},
}

// KnownWindow is the context window of a well-known hosted model; 0 for
// another.
func KnownWindow(model string) int {
	for _, k := range knownWindows {
		if strings.HasPrefix(model, k.prefix) {
			return k.window
		}
	}
	return 0
}
