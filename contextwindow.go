package robby

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ErrContextLength reports a request that does not fit the model's
// context window, even after compaction. The error is a
// [*ContextLengthError].
var ErrContextLength = errors.New("robby: the request does not fit the model's context window")

// A ContextLengthError is a provider's context-length error that
// compaction did not cure: the agent has no [WithCompaction] policy, or
// the request sent again after compacting was still refused. It matches
// [ErrContextLength] and wraps the provider's [*APIError].
type ContextLengthError struct {
	Budget    int // the tokens robby fitted the request into; 0 without compaction or a known window
	Window    int // the model's context window, as the provider or WithContextWindow says; 0 if unknown
	Tokens    int // the request's tokens as the provider counted them; 0 if it did not say
	Estimated int // the request's tokens as robby estimated them; 0 without compaction
	err       error
}

// Error names the sizes known.
func (e *ContextLengthError) Error() string {
	var b strings.Builder
	b.WriteString("robby: the request does not fit the model's context window")
	var sizes []string
	if e.Tokens > 0 {
		sizes = append(sizes, fmt.Sprintf("%d tokens sent", e.Tokens))
	}
	if e.Estimated > 0 {
		sizes = append(sizes, fmt.Sprintf("%d by robby's estimate", e.Estimated))
	}
	if e.Budget > 0 {
		sizes = append(sizes, fmt.Sprintf("budget %d", e.Budget))
	}
	if e.Window > 0 {
		sizes = append(sizes, fmt.Sprintf("window %d", e.Window))
	}
	if len(sizes) > 0 {
		b.WriteString(" (" + strings.Join(sizes, ", ") + ")")
	}
	if e.err != nil {
		b.WriteString(": " + e.err.Error())
	}
	return b.String()
}

// Unwrap returns [ErrContextLength] and the provider's error.
func (e *ContextLengthError) Unwrap() []error { return []error{ErrContextLength, e.err} }

// An overflow is what a provider's context-length error says.
type overflow struct {
	tokens, window int // 0 when the error does not say
}

// contextMarks are what each provider's context-length error holds:
// OpenAI's code and message, llama.cpp's type and message (Ollama relays
// llama.cpp's error inside its own), vLLM's, OpenRouter's and Mistral's
// message, Gemini's, Ollama's own, and Anthropic's OpenAI endpoint's.
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

// contextOverflow recognises a provider's context-length error and reads
// the sizes it gives.
func contextOverflow(err error) (overflow, bool) {
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		return overflow{}, false
	}
	body := string(apiErr.body)
	if body == "" {
		body = apiErr.Message
	}
	lower := strings.ToLower(body)
	found := false
	for _, m := range contextMarks {
		if strings.Contains(lower, m) {
			found = true
			break
		}
	}
	if !found {
		return overflow{}, false
	}
	return overflow{tokens: firstNumber(body, nPrompt, requestTokens), window: firstNumber(body, nCtx, windowSizes)}, true
}

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

// learnWindow keeps a window a provider's error gave, unless the agent was
// given one.
func (a *Agent) learnWindow(window int) {
	if window > 0 && a.core.window == 0 {
		a.core.learned.Store(int64(window))
	}
}

// contextWindow returns the model's context window: the one given, or the
// one learned, or the one the provider or the table says, asked once in
// the agent's life; 0 if unknown.
func (c *core) contextWindow(ctx context.Context) int {
	if c.window > 0 {
		return c.window
	}
	c.discovery.Do(func() {
		if w := c.discoverWindow(ctx); w > 0 {
			c.learned.CompareAndSwap(0, int64(w))
		}
	})
	return int(c.learned.Load())
}

// discoverWindow finds the model's context window: in the table of
// well-known models, or from the server, as llama.cpp's GET /props or
// Ollama's POST /api/show says.
func (c *core) discoverWindow(ctx context.Context) int {
	if w := knownWindow(c.params.Model); w > 0 {
		return w
	}
	srv := c.server(ctx)
	if srv.window > 0 || srv.kind != serverOllama {
		return srv.window
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var body []byte // decoded here: servers differ in the Content-Type they send
	var show struct {
		Parameters string                     `json:"parameters"`
		ModelInfo  map[string]json.RawMessage `json:"model_info"`
	}
	if c.client.Post(ctx, "api/show", map[string]string{"model": c.params.Model}, &body, c.probeOptions()...) == nil && json.Unmarshal(body, &show) == nil {
		if w := ollamaWindow(show.Parameters, show.ModelInfo); w > 0 {
			c.log.DebugContext(ctx, "robby: context window from /api/show", "num_ctx", w)
			return w
		}
	}
	return 0
}

// ollamaDefaultContext is the context Ollama runs a model with when its
// parameters set no num_ctx.
const ollamaDefaultContext = 4096

// ollamaWindow reads the context Ollama runs a model with: the num_ctx of
// its parameters, or Ollama's default, within the model's own length.
func ollamaWindow(parameters string, info map[string]json.RawMessage) int {
	native := 0
	for k, v := range info {
		if strings.HasSuffix(k, ".context_length") {
			native, _ = strconv.Atoi(string(v))
		}
	}
	for line := range strings.Lines(parameters) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "num_ctx" {
			if n, err := strconv.Atoi(f[1]); err == nil && n > 0 {
				return n
			}
		}
	}
	if native == 0 {
		return 0
	}
	return min(native, ollamaDefaultContext)
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

func knownWindow(model string) int {
	for _, k := range knownWindows {
		if strings.HasPrefix(model, k.prefix) {
			return k.window
		}
	}
	return 0
}

// isContextLengthError reports whether err is a provider's context-length
// error, or robby's report of one.
func isContextLengthError(err error) bool {
	if errors.Is(err, ErrContextLength) {
		return true
	}
	_, ok := contextOverflow(err)
	return ok
}
