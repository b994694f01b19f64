package robby

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/robby-go/robby/internal/chatwire"
	"github.com/robby-go/robby/internal/schemas"
	"github.com/robby-go/robby/internal/trunc"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// A Tool is a function the model may call. Build one with [NewTool] or
// [FuncTool] and give it to the agent with [WithTools]. A Tool is immutable
// and safe for concurrent use. Its function may be called concurrently.
type Tool struct {
	name        string
	description string
	params      shared.FunctionParameters                      // the JSON Schema sent to the model
	paramsJSON  json.RawMessage                                // params encoded, if they are the schema's own
	schema      func() *schemas.Args                           // validates arguments before the call; nil: not robby
	bind        func(args json.RawMessage) (invocation, error) // decodes the arguments of a call
	// honorsContext marks a call known to return when its context ends,
	// such as an MCP call. It needs no goroutine to be abandoned.
	honorsContext bool
	idempotent    bool   // safe to run again after a crash: conversation.go
	destructive   bool   // said so to approvals and UIs: Tool.Destructive
	deferred      bool   // offered once a search finds it: toolsearch.go
	mcpServer     string // the server of an MCP tool, for telemetry
	err           error  // a construction error, reported by New
}

// Name returns the name the model calls the tool by.
func (t Tool) Name() string { return t.name }

// Description returns the tool's description, as the model sees it.
func (t Tool) Description() string { return t.description }

// Parameters returns the JSON Schema of the tool's arguments, as sent to the
// model. The caller must not modify it.
func (t Tool) Parameters() map[string]any { return t.params }

// NewTool makes a tool of a typed Go function. The JSON Schema of its
// arguments is inferred from In, which must be a struct (or a map). Field
// names follow their json tags. A `jsonschema:"..."` tag gives a field's
// description. An `enum:"low,normal,high"` tag gives the values it may
// take, or its elements' for a slice or map. A time.Time is a string of
// format date-time (RFC 3339). The model's arguments are validated against
// the schema and decoded into In. The result is sent to the model as JSON,
// except a string result, which is sent as it is.
//
// A type that has no JSON Schema makes [New] fail.
func NewTool[In, Out any](name, description string, fn func(context.Context, In) (Out, error)) Tool {
	t := Tool{name: name, description: description}
	s := schemas.ArgsOf(reflect.TypeFor[In]())
	t.params, t.paramsJSON, t.schema, t.err = s.Params, s.ParamsJSON, func() *schemas.Args { return s }, s.Err
	t.bind = decoded(fn)
	if fn == nil {
		t.err = errors.New("robby: nil function")
	}
	return t
}

// An invocation is a call with its arguments decoded, ready to run. It
// returns the tool's result, which encodeResult makes text.
type invocation func(context.Context) (any, error)

// decoded adapts fn to the raw arguments of a call. They are decoded into
// In before the call, on the caller's goroutine (see toolset.prepare).
func decoded[In, Out any](fn func(context.Context, In) (Out, error)) func(json.RawMessage) (invocation, error) {
	return func(args json.RawMessage) (invocation, error) {
		var in In
		if err := schemas.Decode(args, &in); err != nil {
			if err = decodeWhole(args, &in, err); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInvalidArguments, err)
			}
		}
		return func(ctx context.Context) (any, error) { return fn(ctx, in) }, nil
	}
}

// decodeWhole decodes args into in again after err, with the numbers that
// are whole written as integers. JSON Schema counts 5.0 an integer, as
// models write it at times. encoding/json does not.
func decodeWhole[In any](args json.RawMessage, in *In, err error) error {
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) || !strings.HasPrefix(typeErr.Value, "number") {
		return err
	}
	whole, ok := schemas.WholeNumbers(args)
	if !ok {
		return err
	}
	*in = *new(In)
	return json.Unmarshal(whole, in)
}

// FuncTool makes a tool of an untyped function, in the name→func style.
// parameters is the JSON Schema of the arguments; nil means none. fn gets
// them decoded. Its result is sent to the model as JSON, or as it is when
// it is a string.
func FuncTool(name, description string, parameters map[string]any, fn func(context.Context, map[string]any) (any, error)) Tool {
	t := Tool{name: name, description: description}
	if parameters == nil {
		parameters = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	var schema jsonschema.Schema
	b, err := json.Marshal(parameters)
	if err == nil {
		err = json.Unmarshal(b, &schema)
	}
	if err != nil {
		t.err = fmt.Errorf("parameters: %w", err)
		return t
	}
	c := schemas.Compile(&schema)
	t.params, t.paramsJSON, t.schema, t.err = c.Params, c.ParamsJSON, func() *schemas.Args { return c }, c.Err
	t.bind = decoded(fn)
	if fn == nil {
		t.err = errors.New("robby: nil function")
	}
	return t
}

// validName reports whether the chat-completions API accepts name as a
// function name: ^[a-zA-Z0-9_-]{1,64}$.
func validName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := range len(name) {
		if !nameByte(name[i]) {
			return false
		}
	}
	return true
}

// nameByte reports whether c may stand in a tool name.
func nameByte(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// A ToolCall is a call the model asked for.
type ToolCall struct {
	ID        string // the id the model gave, or one robby made up when it gave none
	Name      string
	Arguments string // JSON text, "{}" when the model sent none
}

// A ToolResult is the outcome of one [ToolCall].
type ToolResult struct {
	Call     ToolCall
	Output   string        // what the tool message tells the model
	Err      error         // nil when the tool succeeded
	Duration time.Duration // how long the tool ran
}

// toolResultJSON is a [ToolResult] as JSON: its error as text.
type toolResultJSON struct {
	Call     ToolCall
	Output   string
	Err      string `json:",omitempty"`
	Duration time.Duration
}

// MarshalJSON encodes r with its error as text, so a result can be stored
// or sent, such as in a durable workflow's history.
func (r ToolResult) MarshalJSON() ([]byte, error) {
	j := toolResultJSON{Call: r.Call, Output: r.Output, Duration: r.Duration}
	if r.Err != nil {
		j.Err = r.Err.Error()
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes what MarshalJSON encoded. The error it gets back
// has the text of the one encoded, not its identity. errors.Is no longer
// matches it.
func (r *ToolResult) UnmarshalJSON(b []byte) error {
	var j toolResultJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = ToolResult{Call: j.Call, Output: j.Output, Duration: j.Duration}
	if j.Err != "" {
		r.Err = errors.New(j.Err)
	}
	return nil
}

// encodeResult makes a tool's result text: a string as it is, any other
// value as JSON.
func encodeResult(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encoding result: %w", err)
	}
	return string(b), nil
}

// toolMessage returns the message giving the model a result, with its JSON.
func toolMessage(r ToolResult) (openai.ChatCompletionMessageParamUnion, json.RawMessage) {
	return openai.ToolMessage(r.Output, r.Call.ID), chatwire.ToolJSON(r.Output, r.Call.ID)
}

// fitOutput makes a tool's output fit a tool message. It must be valid
// UTF-8, or the request would not encode. It keeps at most limit bytes, so
// one huge result does not fill the context window. A note tells the model
// what it does not see.
func fitOutput(out string, limit int) string {
	out = strings.ToValidUTF8(out, "\uFFFD")
	if limit <= 0 || len(out) <= limit {
		return out
	}
	kept := trunc.Cut(out, limit)
	return fmt.Sprintf("%s\n[robby: output truncated: the first %d of %d bytes are shown]", kept, len(kept), len(out))
}

// definition returns the tool's definition as a request sends it.
func (t *Tool) definition() (json.RawMessage, error) {
	if t.paramsJSON != nil {
		return chatwire.FunctionToolJSON(t.name, t.description, t.paramsJSON), nil
	}
	def := shared.FunctionDefinitionParam{Name: t.name, Parameters: t.params}
	if t.description != "" {
		def.Description = openai.String(t.description)
	}
	tool := openai.ChatCompletionFunctionTool(def)
	raw, err := tool.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encoding its definition: %w", err)
	}
	return raw, nil
}

// Idempotent returns a copy of t marked as safe to run again with the same
// arguments. A call of it that a crash interrupted is run again when the run
// resumes ([WithConversation]). It is not reported interrupted. It may run
// before its call is stored.
func (t Tool) Idempotent() Tool {
	t.idempotent = true
	return t
}

// IsIdempotent reports whether t was marked [Tool.Idempotent]. If so, a call
// of it may run again after a crash, or be retried after a failure.
func (t Tool) IsIdempotent() bool { return t.idempotent }

// Destructive returns a copy of t marked as one that may delete or
// overwrite data. Robby runs it as any other tool. The mark is for whoever
// approves a call: a [WithApproval] callback finds it on the tool that
// [ToolFromContext] returns, a stream on [Event].Destructive, and the chat
// page of `robby serve` shows it with the call.
func (t Tool) Destructive() Tool {
	t.destructive = true
	return t
}

// IsDestructive reports whether t was marked [Tool.Destructive]. An MCP
// tool is when its server says so (see [MCPServer.WithToolAnnotations]).
func (t Tool) IsDestructive() bool { return t.destructive }

// dropNulls leaves out the optional arguments the model set to null.
// Models often do so for "no value". The schema would refuse null, and a
// server would read it as a value.
func (t *Tool) dropNulls(args json.RawMessage) json.RawMessage {
	if !bytes.Contains(args, []byte("null")) {
		return args
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(args, &fields) != nil {
		return args // validate says why
	}
	required, _ := t.params["required"].([]any)
	dropped := false
	for k, v := range fields {
		if string(v) == "null" && !slices.Contains(required, any(k)) {
			delete(fields, k)
			dropped = true
		}
	}
	if !dropped {
		return args
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return args
	}
	return b
}

// validate checks a call's arguments against the tool's schema. The
// checker alone most often proves valid arguments so. The validator has
// the last word on the others, and its failure is what the model reads.
func (t *Tool) validate(args json.RawMessage) error {
	var schema *schemas.Args
	if t.schema != nil {
		schema = t.schema()
	}
	if schema.Proves(args) {
		return nil
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return fmt.Errorf("%w: not valid JSON: %v", ErrInvalidArguments, err)
	}
	if schema == nil || schema.Validator() == nil {
		return nil // an MCP tool whose schema robby cannot check: its server does
	}
	if err := schema.Validator().Validate(v); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidArguments, err)
	}
	return nil
}

// finish records the error of a result, which is then what the model
// reads. It fits the output to a tool message and reports the result as
// ready.
func (r *ToolResult) finish(err error, maxOutput int, done chan<- int, i int) {
	if err != nil {
		r.Err, r.Output = err, "Error: "+err.Error()
	}
	r.Output = fitOutput(r.Output, maxOutput)
	if done != nil {
		done <- i
	}
}
