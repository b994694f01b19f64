package robby

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sync"

	"github.com/robby-go/robby/internal/chatwire"

	"github.com/openai/openai-go/v3"
	"github.com/robby-go/robby/internal/schemas"
)

// The answer modes: how a typed run asks the model for its answer. Here too:
// the mode it falls back to when an endpoint refuses one, and the cached
// request heads of native mode.

// An AnswerMode is how a typed run gets its answer from the model.
type AnswerMode int32

// The ways to get a typed answer. [AnswerAuto] is the default.
const (
	// AnswerAuto starts with AnswerNative. It falls back, once, to AnswerTool
	// when the endpoint refuses response_format, alone or together with
	// tools. It then falls back to AnswerPrompted when the endpoint refuses
	// tools. An agent with tools whose server is llama.cpp, Ollama or vLLM
	// starts with AnswerTool instead. Those servers turn response_format into
	// a grammar over the whole reply, which leaves the model no way to call a
	// tool. Robby asks the server what it is once, with GET /props,
	// /api/version and /version at its root. The agent and its clones
	// remember the mode that worked.
	AnswerAuto AnswerMode = iota
	// AnswerNative asks for the answer with response_format json_schema. It
	// is strict when the schema has a strict form. Tools are offered as
	// usual.
	AnswerNative
	// AnswerTool offers a tool, final_answer, whose parameters are the
	// answer's schema. The model's call of it is the answer.
	AnswerTool
	// AnswerPrompted puts the schema in the system message. It takes the JSON
	// object in the model's text, ignoring prose and code fences around it.
	AnswerPrompted
)

var answerModeNames = [...]string{"auto", "native", "tool", "prompted"}

// String returns the mode's name, such as "native".
func (m AnswerMode) String() string {
	if m >= 0 && int(m) < len(answerModeNames) {
		return answerModeNames[m]
	}
	return fmt.Sprintf("AnswerMode(%d)", int(m))
}

// autoMode is the mode an [AnswerAuto] run starts in: the one the agent
// settled on, else native. But if the agent has tools and its server binds
// the whole reply to response_format's grammar, the model could not call
// them. Then it is the answer tool, remembered.
func (a *Agent) autoMode(ctx context.Context) AnswerMode {
	if m := AnswerMode(a.core.answerMode.Load()); m != AnswerAuto {
		return m
	}
	if len(a.core.tools.get(ctx).names) == 0 {
		return AnswerNative
	}
	if srv := a.core.server(ctx); srv.Kind.GrammarBound() {
		a.core.log.InfoContext(ctx, "robby: the server's grammar for response_format would block tool calls; answering with the answer tool",
			slog.String("server", srv.Kind.String()))
		a.core.answerMode.CompareAndSwap(int32(AnswerAuto), int32(AnswerTool))
		return AnswerMode(a.core.answerMode.Load())
	}
	return AnswerNative
}

// answerTool returns the name of the answer tool: final_answer, unless
// the agent has a tool of that name.
func (a *Agent) answerTool(ctx context.Context) string {
	if a.core.tools.get(ctx).byName[answerToolName] != nil {
		return answerToolOther
	}
	return answerToolName
}

// answerRun is the run that asks for the answer in a mode. It has the options
// of base and the results of the calls the conversation awaits.
func answerRun(base runConfig, mode AnswerMode, as *schemas.Answer, tool string, results []ToolResult) runConfig {
	rc := base
	rc.typed, rc.results = nil, results
	switch mode {
	case AnswerNative:
		if base.params != nil && hasFormat(base.params) {
			break // the caller's own response_format, as it is: a client's name, strict or json_object
		}
		if base.params == nil {
			rc.format = as // the agent's parameters and as's response_format, kept: typedHeads
			break
		}
		params := *base.params
		params.ResponseFormat = as.ResponseFormat()
		rc.params = &params
	case AnswerTool:
		rc.caller = append(slices.Clip(base.caller), openai.FunctionDefinitionParam{
			Name:        tool,
			Description: openai.String("Give your final answer: call this once you know it, with the answer as the arguments."),
			Parameters:  as.Params,
		})
	case AnswerPrompted:
		rc.system = append(slices.Clip(rc.system), systemJSON("Answer with a single JSON object that fits this JSON Schema, and nothing else:\n"+string(as.Raw)))
	}
	return rc
}

// nextAnswerMode returns the mode to try when the endpoint refused mode.
func nextAnswerMode(mode AnswerMode, err error) (AnswerMode, bool) {
	switch {
	case mode == AnswerNative && refused(err, refusalPattern):
		return AnswerTool, true
	case mode == AnswerTool && refused(err, toolsRefusal):
		return AnswerPrompted, true
	}
	return mode, false
}

// refusalPattern matches the messages of providers refusing a request's
// structured-output part. toolsRefusal matches those refusing its tools. See
// refused.
var (
	refusalPattern = regexp.MustCompile(`(?i)response_format|json_schema|json schema|grammar|structured output|guided|invalid format|response_schema`)
	toolsRefusal   = regexp.MustCompile(`(?i)tool`)
)

// refused reports whether err is a provider refusing the request for what
// pattern names. Other failures of the request are not refusals.
func refused(err error, pattern *regexp.Regexp) bool {
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.StatusCode {
	case 400, 422, 500, 501: // llama.cpp and its forks answer 500
		return pattern.MatchString(apiErr.Message)
	}
	return false
}

// maxTypedHeads bounds typedHeads. [WithAnswerSchema] makes a schema per
// call, so a program giving schemas that way would grow it without end.
const maxTypedHeads = 64

// typedHeads caches the parameters of a typed run's request in native mode,
// and their head, per schema and streaming. The parameters are the agent's
// with the response_format of an answer schema. Laying the schema over the
// agent's parameters (1.2 KB) and encoding it anew cost each answer more than
// the rest of its request. Safe for concurrent use.
type typedHeads struct {
	mu    sync.Mutex
	heads map[typedHeadKey]typedHead
}

type typedHead struct {
	head   []byte
	params *openai.ChatCompletionNewParams
}

type typedHeadKey struct {
	schema *schemas.Answer
	stream bool
}

// get returns the agent's parameters base with the response_format of
// as, and their head. Both are shared: request bodies copy the head, and
// nothing writes to the parameters.
func (t *typedHeads) get(as *schemas.Answer, base *openai.ChatCompletionNewParams, stream bool) ([]byte, *openai.ChatCompletionNewParams, error) {
	key := typedHeadKey{as, stream}
	t.mu.Lock()
	h, ok := t.heads[key]
	t.mu.Unlock()
	if ok {
		return h.head, h.params, nil
	}
	p := *base
	p.ResponseFormat = as.ResponseFormat()
	head, err := chatwire.EncodeHead(&p, stream)
	if err != nil {
		return nil, nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.heads == nil {
		t.heads = make(map[typedHeadKey]typedHead)
	}
	if len(t.heads) < maxTypedHeads {
		t.heads[key] = typedHead{head, &p}
	}
	return head, &p, nil
}

// answerToolName is the name of the answer tool. answerToolOther replaces it
// when the agent has a tool of that name.
const (
	answerToolName  = "final_answer"
	answerToolOther = "robby_final_answer"
)

// hasFormat reports whether p asks for JSON itself, with a json_schema or
// json_object response_format. Native mode then sends it as it is.
func hasFormat(p *openai.ChatCompletionNewParams) bool {
	return p.ResponseFormat.OfJSONSchema != nil || p.ResponseFormat.OfJSONObject != nil
}
