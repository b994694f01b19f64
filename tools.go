package robby

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// A Tool is a function the model may call. Build one with [NewTool] or
// [FuncTool] and give it to the agent with [WithTools]. A Tool is immutable
// and safe for concurrent use; its function may be called concurrently.
type Tool struct {
	name        string
	description string
	params      shared.FunctionParameters                      // the JSON Schema sent to the model
	schema      *jsonschema.Resolved                           // validates arguments before the call
	bind        func(args json.RawMessage) (invocation, error) // decodes the arguments of a call
	// honorsContext marks a call known to return when its context ends
	// (an MCP call), which then needs no goroutine to be abandoned.
	honorsContext bool
	idempotent    bool  // safe to run again after a crash: conversation.go
	err           error // a construction error, reported by New
}

// Name returns the name the model calls the tool by.
func (t Tool) Name() string { return t.name }

// Description returns the tool's description, as the model sees it.
func (t Tool) Description() string { return t.description }

// Parameters returns the JSON Schema of the tool's arguments, as sent to the
// model. The caller must not modify it.
func (t Tool) Parameters() map[string]any { return t.params }

// NewTool makes a tool of a typed Go function. The JSON Schema of its
// arguments is inferred from In, which must be a struct (or a map): field
// names follow their json tags, and a `jsonschema:"..."` tag gives a field's
// description. The model's arguments are validated against the schema and
// decoded into In. The result is sent to the model as JSON, except a string
// result, which is sent as it is.
//
// A type that has no JSON Schema makes [New] fail.
func NewTool[In, Out any](name, description string, fn func(context.Context, In) (Out, error)) Tool {
	t := Tool{name: name, description: description}
	s := schemaOf(reflect.TypeFor[In]())
	t.params, t.schema, t.err = s.params, s.resolved, s.err
	t.bind = decoded(fn)
	if fn == nil {
		t.err = errors.New("nil function")
	}
	return t
}

// A compiledSchema is the schema of a tool's arguments in every form robby
// uses it.
type compiledSchema struct {
	params   shared.FunctionParameters
	resolved *jsonschema.Resolved
	err      error
}

// schemaCache holds the compiled schema of each argument type, as
// encoding/json caches its encoders: inferring and resolving a schema costs
// hundreds of allocations, and programs build the same tools again and again
// (an agent per request). Entries are immutable.
var schemaCache sync.Map // reflect.Type → *compiledSchema

func schemaOf(t reflect.Type) *compiledSchema {
	if s, ok := schemaCache.Load(t); ok {
		return s.(*compiledSchema)
	}
	schema, err := jsonschema.ForType(t, nil)
	if err == nil && schema.Type != "object" {
		err = fmt.Errorf("arguments type %v is not a struct or map", t)
	}
	s := &compiledSchema{err: err}
	if err == nil {
		s = compileSchema(schema)
	}
	actual, _ := schemaCache.LoadOrStore(t, s)
	return actual.(*compiledSchema)
}

// An invocation is a call with its arguments decoded, ready to run. It
// returns the tool's result, which encodeResult makes text.
type invocation func(context.Context) (any, error)

// decoded adapts fn to the raw arguments of a call: they are decoded into
// In, before the call, on the caller's goroutine (see toolset.prepare).
func decoded[In, Out any](fn func(context.Context, In) (Out, error)) func(json.RawMessage) (invocation, error) {
	return func(args json.RawMessage) (invocation, error) {
		var in In
		err := json.Unmarshal(args, &in)
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && strings.HasPrefix(typeErr.Value, "number") {
			// JSON Schema counts 5.0 an integer, as models write it
			// at times; encoding/json does not.
			if whole, ok := wholeNumbers(args); ok {
				in = *new(In)
				err = json.Unmarshal(whole, &in)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidArguments, err)
		}
		return func(ctx context.Context) (any, error) { return fn(ctx, in) }, nil
	}
}

// wholeNumbers returns args with the numbers that are whole but written
// with a fraction or an exponent (5.0, 1e3) written as integers, and
// whether there were any.
func wholeNumbers(args json.RawMessage) (json.RawMessage, bool) {
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil, false
	}
	changed := false
	var walk func(any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case json.Number:
			if f, err := v.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 && strings.ContainsAny(string(v), ".eE") {
				changed = true
				return json.Number(strconv.FormatInt(int64(f), 10))
			}
		case map[string]any:
			for k, e := range v {
				v[k] = walk(e)
			}
		case []any:
			for i, e := range v {
				v[i] = walk(e)
			}
		}
		return v
	}
	v = walk(v)
	if !changed {
		return nil, false
	}
	b, err := json.Marshal(v)
	return b, err == nil
}

// FuncTool makes a tool of an untyped function, in the name→func style:
// parameters is the JSON Schema of the arguments (nil means none), fn gets
// them decoded, and its result is sent to the model as JSON, or as it is
// when it is a string.
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
	c := compileSchema(&schema)
	t.params, t.schema, t.err = c.params, c.resolved, c.err
	t.bind = decoded(fn)
	if fn == nil {
		t.err = errors.New("nil function")
	}
	return t
}

// compileSchema resolves a schema once, for validation, and keeps its JSON
// form for the requests.
func compileSchema(s *jsonschema.Schema) *compiledSchema {
	resolved, err := s.Resolve(nil)
	if err != nil {
		return &compiledSchema{err: fmt.Errorf("schema: %w", err)}
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return &compiledSchema{err: fmt.Errorf("schema: %w", err)}
	}
	var params shared.FunctionParameters
	if err := json.Unmarshal(raw, &params); err != nil {
		return &compiledSchema{err: fmt.Errorf("schema: %w", err)}
	}
	return &compiledSchema{params: params, resolved: resolved}
}

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

// toolbox holds an agent's tools, local and MCP, and the toolset offered
// now: MCP servers may change their tools during the agent's life.
type toolbox struct {
	local  []Tool
	hub    *mcpHub // nil without MCP servers
	policy *callPolicy

	mu      sync.Mutex // serializes rebuilds
	current atomic.Pointer[toolset]
}

func (b *toolbox) init(cfg *config) error {
	b.local = cfg.tools
	b.policy = &callPolicy{limit: cfg.maxCalls, timeout: cfg.timeout, approve: cfg.approve, maxOutput: cfg.maxOutput, log: cfg.logger}
	if err := b.rebuild(); err != nil {
		return err
	}
	if len(cfg.mcp) == 0 {
		return nil
	}
	hub, err := connectMCP(cfg, b.current.Load().byName)
	if err != nil {
		return err
	}
	b.hub = hub
	return b.rebuild()
}

// rebuild makes the toolset of the local tools and the MCP tools known now.
func (b *toolbox) rebuild() error {
	tools := b.local
	if b.hub != nil {
		tools = append(slices.Clip(tools), b.hub.tools()...)
	}
	ts, err := newToolset(tools, b.policy)
	if err != nil {
		return err
	}
	b.current.Store(ts)
	return nil
}

// get returns the toolset to offer, after fetching the tools of the MCP
// servers that announced a change.
func (b *toolbox) get(ctx context.Context) *toolset {
	if b.hub == nil || !b.hub.changed.Load() {
		return b.current.Load()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hub.changed.Swap(false) {
		b.hub.refresh(ctx)
		if err := b.rebuild(); err != nil {
			b.policy.log.WarnContext(ctx, "robby: keeping the previous tools", slog.Any("error", err))
		}
	}
	return b.current.Load()
}

func (b *toolbox) close() error {
	if b.hub == nil {
		return nil
	}
	return b.hub.close()
}

// toolset is the immutable set of tools an agent offers, with the bounds
// their calls run within.
type toolset struct {
	*callPolicy
	byName map[string]*Tool
	names  []string          // sorted, for messages to the model
	raw    []json.RawMessage // the tools' definitions, encoded for the requests
}

// callPolicy is how an agent runs tool calls.
type callPolicy struct {
	limit     int           // calls run per turn
	timeout   time.Duration // per turn's calls; 0 for none
	approve   func(context.Context, ToolCall) error
	maxOutput int // bytes of a tool's output the model reads
	log       *slog.Logger
}

func newToolset(tools []Tool, policy *callPolicy) (*toolset, error) {
	ts := &toolset{callPolicy: policy, byName: make(map[string]*Tool, len(tools))}
	defs := make([]openai.ChatCompletionToolUnionParam, 0, len(tools))
	for i := range tools {
		t := &tools[i]
		switch {
		case !validName(t.name):
			return nil, fmt.Errorf("tool %q: name must match ^[a-zA-Z0-9_-]{1,64}$", t.name)
		case t.err != nil:
			return nil, fmt.Errorf("tool %q: %w", t.name, t.err)
		case t.bind == nil:
			return nil, fmt.Errorf("tool %q: not built with NewTool or FuncTool", t.name)
		case ts.byName[t.name] != nil:
			return nil, fmt.Errorf("tool %q: duplicate name", t.name)
		}
		ts.byName[t.name] = t
		ts.names = append(ts.names, t.name)
		def := shared.FunctionDefinitionParam{Name: t.name, Parameters: t.params}
		if t.description != "" {
			def.Description = openai.String(t.description)
		}
		defs = append(defs, openai.ChatCompletionFunctionTool(def))
	}
	slices.Sort(ts.names)
	var err error
	ts.raw, err = encodeTools(defs)
	return ts, err
}

// execute runs calls concurrently, at most ts.limit of them, and fills
// results in call order; the calls past the limit get ErrToolLimit. If done
// is not nil, the index of each result is sent on it once it is ready.
//
// The calls of a turn start together, so one deadline bounds them all. A
// tool still running when the deadline or ctx ends is abandoned with an
// error result: its goroutine ends when the tool function returns.
func (ts *toolset) execute(ctx context.Context, calls []ToolCall, results []ToolResult, done chan<- int) {
	run := min(len(calls), ts.limit)
	for i := range calls {
		results[i].Call = calls[i]
		if i >= run {
			results[i].finish(fmt.Errorf("%w: call not run, the limit is %d calls a turn", ErrToolLimit, ts.limit), 0, done, i)
		}
	}
	if run == 0 {
		return
	}
	if ts.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, ts.timeout, toolTimeout(ts.timeout))
		defer cancel()
	}
	type outcome struct {
		i   int
		out any
		err error
	}
	start := time.Now()
	ended := make([]bool, run)
	record := func(o outcome) {
		if o.err != nil && ctx.Err() != nil {
			o.err = fmt.Errorf("tool %q: %w", calls[o.i].Name, context.Cause(ctx)) // say which bound
		}
		ended[o.i] = true
		results[o.i].Duration = time.Since(start)
		if o.err == nil {
			results[o.i].Output, o.err = encodeResult(o.out)
		}
		results[o.i].finish(o.err, ts.maxOutput, done, o.i)
	}
	ch := make(chan outcome, run) // never blocks an abandoned tool
	left := 0
	for i := range run {
		t, inv, err := ts.prepare(calls[i])
		switch {
		case err != nil:
			record(outcome{i: i, err: err})
		case run == 1 && t.honorsContext:
			// Nothing to abandon: call it here and spare a goroutine.
			out, err := ts.invoke(ctx, calls[i], inv)
			record(outcome{i, out, err})
		default:
			left++
			go func() {
				out, err := ts.invoke(ctx, calls[i], inv)
				ch <- outcome{i, out, err}
			}()
		}
	}
	for ; left > 0; left-- {
		select {
		case o := <-ch:
			record(o)
		case <-ctx.Done():
			for ; left > 0 && len(ch) > 0; left-- { // finished in time after all: keep their work
				record(<-ch)
			}
			for i := range run {
				if !ended[i] {
					record(outcome{i: i, err: errAbandoned})
				}
			}
			return
		}
	}
}

// errAbandoned stands for the error of a tool that did not return in time;
// record replaces it with the bound that ended it.
var errAbandoned = errors.New("abandoned")

// finish records the error of a result, which then is what the model reads,
// fits the output to a tool message, and reports the result as ready.
func (r *ToolResult) finish(err error, maxOutput int, done chan<- int, i int) {
	if err != nil {
		r.Err, r.Output = err, "Error: "+err.Error()
	}
	r.Output = fitOutput(r.Output, maxOutput)
	if done != nil {
		done <- i
	}
}

// fitOutput makes a tool's output fit a tool message: valid UTF-8 (the
// request would not encode otherwise) and at most max bytes, with a note
// telling the model what it does not see, so that one huge result does not
// fill the context window.
func fitOutput(out string, max int) string {
	out = strings.ToValidUTF8(out, "\uFFFD")
	if max <= 0 || len(out) <= max {
		return out
	}
	kept := cutUTF8(out, max)
	return fmt.Sprintf("%s\n[robby: output truncated: the first %d of %d bytes are shown]", kept, len(kept), len(out))
}

// cutUTF8 returns the longest prefix of s of at most n bytes that does not
// end inside a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// prepare finds a call's tool, checks its arguments and decodes them. It
// runs on the caller's goroutine, whose stack has grown already: the schema
// validator and the decoder are deep, and growing a fresh goroutine's stack
// for them cost more than the work itself.
func (ts *toolset) prepare(call ToolCall) (*Tool, invocation, error) {
	t := ts.byName[call.Name]
	if t == nil {
		return nil, nil, fmt.Errorf("%w %q; the tools are: %s", ErrUnknownTool, call.Name, strings.Join(ts.names, ", "))
	}
	args := t.dropNulls(json.RawMessage(call.Arguments))
	if err := t.validate(args); err != nil {
		return nil, nil, fmt.Errorf("tool %q: %w", call.Name, err)
	}
	run, err := t.bind(args)
	if err != nil {
		return nil, nil, fmt.Errorf("tool %q: %w", call.Name, err)
	}
	return t, run, nil
}

// invoke asks for approval and runs a prepared call, recovering a panic of
// either. Its result is encoded by the caller, for the same reason.
func (ts *toolset) invoke(ctx context.Context, call ToolCall, run invocation) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			ts.log.ErrorContext(ctx, "robby: tool panicked", slog.String("tool", call.Name),
				slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
			out, err = nil, fmt.Errorf("tool %q: %w: %v", call.Name, ErrToolPanic, p)
		}
	}()
	if ts.approve != nil {
		if err := ts.approve(ctx, call); err != nil {
			return nil, fmt.Errorf("tool %q: %w: %w", call.Name, ErrNotApproved, err)
		}
	}
	if out, err = run(ctx); err != nil {
		return nil, fmt.Errorf("tool %q: %w", call.Name, err)
	}
	return out, nil
}

// dropNulls leaves out the optional arguments the model set to null, as
// models often do for "no value": the schema would refuse null, and a
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

// toolTimeout is the cause of a tool's context ending at its timeout.
type toolTimeout time.Duration

func (d toolTimeout) Error() string { return "timed out after " + time.Duration(d).String() }
func (toolTimeout) Unwrap() error   { return context.DeadlineExceeded }

func (t *Tool) validate(args json.RawMessage) error {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return fmt.Errorf("%w: not valid JSON: %v", ErrInvalidArguments, err)
	}
	if t.schema == nil {
		return nil // an MCP tool whose schema robby cannot check: its server does
	}
	if err := t.schema.Validate(v); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidArguments, err)
	}
	return nil
}
