package robby

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/robby-go/robby/internal/chatwire"

	"github.com/robby-go/robby/internal/schemas"

	"github.com/openai/openai-go/v3"
)

// A RunOption changes one run of [Agent.Run], [Agent.Stream],
// [Agent.Resume] or [Agent.ResumeStream], and no other. An invalid one
// makes the run fail before it sends anything. The conversation is left
// unchanged.
type RunOption func(*runConfig) error

// A runConfig is what a run starts from, beyond the agent's configuration.
type runConfig struct {
	params  *openai.ChatCompletionNewParams // laid over the agent's; nil for none
	caller  []openai.FunctionDefinitionParam
	results []ToolResult
	system  []json.RawMessage // system messages for this run only
	journal *journal          // the stored conversation, if any: conversation.go
	typed   *typedConfig      // for RunTyped and StreamTyped only
	format  *schemas.Answer   // a typed run's schema; its response_format goes with the agent's parameters
	tool    *toolIdentity     // the agent's tool, when it runs as one: astool.go
	step    *turnStep         // WithOneTurn: the turn of a run carried on elsewhere
	before  int               // turns a team's other agents took in the run: handoff.go
}

// WithRunParams lays request parameters over the agent's ([WithParams],
// [WithModel]) for one run. Every parameter params sets, its extra fields
// included, replaces the agent's. The others stay as they are. An empty
// Model keeps the agent's. Messages and Tools are not parameters. Give
// messages as the prompt or with [Agent.AddMessages], and tools with
// [WithCallerTools]. Params that set nothing change nothing.
func WithRunParams(params openai.ChatCompletionNewParams) RunOption {
	return func(rc *runConfig) error {
		if len(params.Messages) > 0 || len(params.Tools) > 0 {
			return errors.New("robby: WithRunParams: Messages and Tools are not parameters")
		}
		// Params that set nothing leave the run the agent's, encoded once:
		// most requests a server passes on set none of their own.
		rc.params = nil
		if !reflect.ValueOf(&params).Elem().IsZero() {
			rc.params = &params
		}
		return nil
	}
}

// WithRunSystem gives the model text as a system message in every request
// of one run, such as context retrieved for its prompt. It comes after the
// system messages that open the conversation ([WithSystem]). The
// conversation does not keep it. Given more than once, it adds a message
// each time.
func WithRunSystem(text string) RunOption {
	return func(rc *runConfig) error {
		b, err := openai.SystemMessage(text).MarshalJSON()
		if err != nil {
			return fmt.Errorf("WithRunSystem: %w", err)
		}
		rc.system = append(rc.system, b)
		return nil
	}
}

// WithCallerTools offers the model, for one run, tools that the caller
// runs itself: a person who answers a question, another system, or the
// client of an endpoint. When the model calls one of them, the run ends
// without error and returns the calls in [Result.Pending]. Give their
// results later with [WithToolResults]. Calls of the agent's own tools in
// that same turn are not run and are left out of the conversation. The
// model calls them again once it has read the results.
//
// A caller-run tool may not have the name of one of the agent's tools.
// The definitions are sent as they are: the model sees their names,
// descriptions and JSON Schemas as given.
func WithCallerTools(tools ...openai.FunctionDefinitionParam) RunOption {
	return func(rc *runConfig) error {
		rc.caller = append(rc.caller, tools...)
		return nil
	}
}

// WithToolResults gives the results of the calls a run ended on
// ([Result.Pending]), matched to them by Call.ID. Call.Name and
// Call.Arguments need not be set. A result with Err set tells the model
// "Error: " and the error's text, as for a failing tool. Otherwise the
// model reads Output, bounded by [WithMaxToolOutput].
//
// The results are added to the conversation before the run's prompt, if
// any, with its first turn. The caller may give no result for a call, or
// continue the conversation without answering. Then the call gets an
// error result that tells the model no result was given. So every tool
// call in the conversation has exactly one result, which keeps it valid
// for any provider. A result for a call that awaits none is an error.
func WithToolResults(results ...ToolResult) RunOption {
	return func(rc *runConfig) error {
		rc.results = append(rc.results, results...)
		return nil
	}
}

// A turnStep is where a run carried on in single turns ([WithOneTurn])
// stands.
type turnStep struct {
	done  int    // turns taken before
	spent Budget // what they spent
}

// WithOneTurn makes the run one turn of a longer run that its caller
// carries on. An example is a durable workflow that runs each model
// request and each tool call as a step of its own. The run asks the model
// once and ends. The calls of the agent's own tools are not run but
// returned in [Result.Pending], as caller-run tools' are
// ([WithCallerTools]). Give their results to the next turn with
// [WithToolResults], run with [Agent.ExecuteToolCalls] or otherwise.
//
// done counts the turns the longer run took before, and spent what they
// spent. The turn limit ([WithMaxTurns], [WithFinalAnswer]) and the
// budget ([WithBudget]) count them. So they bound the longer run as they
// bound a run of [Agent.Run]. Events number the turn done+1.
func WithOneTurn(done int, spent Budget) RunOption {
	return func(rc *runConfig) error {
		if done < 0 || spent.ModelCalls < 0 || spent.Tokens < 0 || spent.Cost < 0 {
			return fmt.Errorf("robby: WithOneTurn: negative turns (%d) or spending (%+v)", done, spent)
		}
		rc.step = &turnStep{done: done, spent: spent}
		return nil
	}
}

// turnsDone returns the turns a run counts as taken before it starts.
func (rc *runConfig) turnsDone() int {
	if rc.step == nil {
		return rc.before
	}
	return rc.step.done + rc.before
}

// spent returns what a run counts as spent before it starts.
func (rc *runConfig) spent() Budget {
	if rc.step == nil {
		return Budget{}
	}
	return rc.step.spent
}

// newRunConfig applies opts.
func newRunConfig(opts []RunOption) (runConfig, error) {
	var rc runConfig
	for i, opt := range opts {
		if opt == nil {
			return rc, fmt.Errorf("robby: run option %d of %d is nil", i+1, len(opts))
		}
		if err := opt(&rc); err != nil {
			return rc, err
		}
	}
	return rc, nil
}

// isCaller reports whether a call is for one of the caller's tools.
func (rc *runConfig) isCaller(c ToolCall) bool {
	return slices.ContainsFunc(rc.caller, func(t openai.FunctionDefinitionParam) bool { return t.Name == c.Name })
}

// splitCalls returns the calls to answer in this turn, those the caller
// runs (ext), and whether the run pauses for them.
func (rc *runConfig) splitCalls(calls []ToolCall, final bool) (run, ext []ToolCall, paused bool) {
	if len(rc.caller) == 0 && rc.step == nil {
		return calls, nil, false // the usual run: the agent runs every call
	}
	ext = slices.DeleteFunc(slices.Clone(calls), func(c ToolCall) bool { return !rc.isCaller(c) })
	if rc.step != nil && len(ext) == 0 {
		ext = calls // the caller runs the agent's own tools too
	}
	paused = len(ext) > 0 && !final
	if paused {
		// The caller runs these: the run ends with them unanswered. A
		// paused run drops the calls of the agent's own tools in the
		// same turn: neither the conversation nor Result.Pending has
		// them, and the model will ask again once it has the results.
		// (WithOneTurn's turn pauses on the agent's own calls instead,
		// when it calls none of the caller's tools.)
		return ext, ext, true
	}
	return calls, ext, false
}

// callerTools encodes the caller's tools, after checking that none has the
// name of one of the agent's.
func (rc *runConfig) callerTools(ts *toolset) ([]json.RawMessage, error) {
	if len(rc.caller) == 0 {
		return nil, nil
	}
	defs := make([]openai.ChatCompletionToolUnionParam, len(rc.caller))
	for i, t := range rc.caller {
		if ts.byName[t.Name] != nil {
			return nil, fmt.Errorf("robby: WithCallerTools: tool %q has the name of one of the agent's own tools", t.Name)
		}
		defs[i] = openai.ChatCompletionFunctionTool(t)
	}
	raw, err := chatwire.EncodeTools(defs)
	if err != nil {
		return nil, fmt.Errorf("WithCallerTools: %w", err)
	}
	return raw, nil
}

// answers returns the results of the calls that await one, in their order.
// Those the caller gave come as given; the others get an error result.
func (rc *runConfig) answers(awaiting []ToolCall, maxOutput int) ([]ToolResult, error) {
	if len(awaiting) == 0 && len(rc.results) == 0 {
		return nil, nil
	}
	given := make(map[string]*ToolResult, len(rc.results))
	for i := range rc.results {
		r := &rc.results[i]
		switch {
		case !slices.ContainsFunc(awaiting, func(c ToolCall) bool { return c.ID == r.Call.ID }):
			return nil, fmt.Errorf("robby: WithToolResults: no call awaits a result with id %q", r.Call.ID)
		case given[r.Call.ID] != nil:
			return nil, fmt.Errorf("robby: WithToolResults: two results for the call with id %q", r.Call.ID)
		}
		given[r.Call.ID] = r
	}
	results := make([]ToolResult, len(awaiting))
	for i, c := range awaiting {
		results[i].Call = c
		err := errNoResult
		if r := given[c.ID]; r != nil {
			results[i].Output, results[i].Duration, err = r.Output, r.Duration, r.Err
		}
		results[i].finish(err, maxOutput, nil, 0)
	}
	return results, nil
}

// errNoResult is what the model reads of a call the caller left
// unanswered.
var errNoResult = errors.New("no result was given for this call")

// overlayParams lays over's parameters over base's. Parameters openai-go
// has no field for, in either, are kept as extra fields.
func overlayParams(base, over *openai.ChatCompletionNewParams) (openai.ChatCompletionNewParams, error) {
	if onlyFormat(over) {
		p := *base
		p.ResponseFormat = over.ResponseFormat
		return p, nil
	}
	merged, err := paramFields(base)
	if err != nil {
		return openai.ChatCompletionNewParams{}, err
	}
	fields, err := paramFields(over)
	if err != nil {
		return openai.ChatCompletionNewParams{}, err
	}
	maps.Copy(merged, fields)
	b, err := json.Marshal(merged)
	if err != nil {
		return openai.ChatCompletionNewParams{}, err
	}
	var p openai.ChatCompletionNewParams
	if err := p.UnmarshalJSON(b); err != nil {
		return openai.ChatCompletionNewParams{}, fmt.Errorf("WithRunParams: %w", err)
	}
	if err := keepExtra(&p, merged); err != nil {
		return openai.ChatCompletionNewParams{}, err
	}
	if rf := over.ResponseFormat; rf.OfJSONSchema != nil || rf.OfJSONObject != nil || rf.OfText != nil {
		// As given: decoded, a schema's properties would lose their
		// order. A model writes them in that order.
		p.ResponseFormat = rf
	}
	return p, nil
}

// onlyFormat reports whether p sets response_format and nothing else.
// Those are laid over the agent's without the trip through JSON, which
// would encode the schema five times.
func onlyFormat(p *openai.ChatCompletionNewParams) bool {
	q := *p
	q.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{}
	return reflect.ValueOf(q).IsZero()
}

// paramFields returns the parameters p sets, encoded, leaving out messages
// and tools.
func paramFields(p *openai.ChatCompletionNewParams) (map[string]json.RawMessage, error) {
	b, err := p.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encoding the parameters: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, err
	}
	delete(fields, "messages")
	delete(fields, "tools")
	return fields, nil
}

// keepExtra sets the parameters that decoding into p dropped (names
// openai-go does not know) as p's extra fields.
func keepExtra(p *openai.ChatCompletionNewParams, params map[string]json.RawMessage) error {
	read, err := paramFields(p)
	if err != nil {
		return err
	}
	extra := map[string]any{}
	for k, v := range params {
		if _, ok := read[k]; !ok && string(v) != "null" {
			extra[k] = v
		}
	}
	if len(extra) > 0 {
		p.SetExtraFields(extra)
	}
	return nil
}

// errTypedOption refuses a typed run's option given to another run
// without a schema.
var errTypedOption = errors.New("robby: WithAnswerMode and WithMaxRepairs are options of RunTyped, StreamTyped and a run with WithAnswerSchema")

// A toolIdentity is the name and description of the tool an agent runs
// as. Its runs' spans carry them.
type toolIdentity struct{ name, description string }
