package robby

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"reflect"
	"slices"
	"strings"

	"github.com/robby-go/robby/internal/jsonstream"

	"github.com/robby-go/robby/internal/schemas"
)

// DefaultMaxRepairs is how many times a typed run asks the model to repair
// an answer that does not fit the schema. [WithMaxRepairs] changes it.
const DefaultMaxRepairs = 2

// typedConfig is what the typed run options set.
type typedConfig struct {
	mode    AnswerMode
	repairs int
	schema  *schemas.Answer // nil: inferred from the answer's type
}

// typedOption makes a [RunOption] of [RunTyped] and [StreamTyped]. Other
// runs refuse it.
func typedOption(set func(*typedConfig) error) RunOption {
	return func(rc *runConfig) error {
		if rc.typed == nil {
			rc.typed = &typedConfig{repairs: DefaultMaxRepairs}
		}
		return set(rc.typed)
	}
}

// WithAnswerMode chooses how a typed run asks for its answer instead of
// [AnswerAuto].
func WithAnswerMode(m AnswerMode) RunOption {
	return typedOption(func(c *typedConfig) error {
		if m < AnswerAuto || m > AnswerPrompted {
			return fmt.Errorf("robby: WithAnswerMode: unknown mode %v", m)
		}
		c.mode = m
		return nil
	})
}

// WithMaxRepairs sets how many times a typed run asks again for an answer
// that does not fit the schema. Each time, it tells the model what is
// wrong. 0 takes the first answer or fails. The default is
// [DefaultMaxRepairs].
func WithMaxRepairs(n int) RunOption {
	return typedOption(func(c *typedConfig) error {
		if n < 0 {
			return fmt.Errorf("robby: WithMaxRepairs: %d repairs", n)
		}
		c.repairs = n
		return nil
	})
}

// WithAnswerSchema gives the answer's JSON Schema instead of inferring it
// from the type. It is for answers whose shape is known only at run time:
// decode them into json.RawMessage or map[string]any. The schema must
// describe an object.
//
// Given to [Agent.Run], [Agent.Stream], [Agent.Resume] or
// [Agent.ResumeStream], it makes that run end as [RunTyped] does, with
// [WithAnswerMode] and [WithMaxRepairs] if given. The answer's JSON is
// [Result.Text]. Unlike a typed run, such a run may offer caller-run tools
// ([WithCallerTools]): it ends on their calls without an answer, as any
// run does. In native mode, a json_schema or json_object response_format
// of [WithRunParams] is sent as it is, in place of the schema's.
func WithAnswerSchema(schema map[string]any) RunOption {
	return typedOption(func(c *typedConfig) error {
		c.schema = schemas.AnswerFrom(schema)
		if c.schema.Err != nil {
			return fmt.Errorf("WithAnswerSchema: %w", c.schema.Err)
		}
		return nil
	})
}

// An AnswerError is the error of a typed run whose answer never fitted the
// schema, after the repairs allowed. Test for it with [errors.As]. It
// matches [ErrInvalidAnswer] with [errors.Is].
type AnswerError struct {
	Mode     AnswerMode // how the answer was asked for
	Raw      string     // the model's last answer, as it wrote it
	Failures []string   // everything wrong with it, one line each
	Attempts int        // the answers read: 1 + the repairs
}

// ErrInvalidAnswer is matched by every [*AnswerError].
var ErrInvalidAnswer = errors.New("robby: the answer does not fit the schema")

// Error says how many answers were read and what was wrong with the last.
func (e *AnswerError) Error() string {
	return fmt.Sprintf("%v after %d answers (%s mode): %s", ErrInvalidAnswer, e.Attempts, e.Mode, strings.Join(e.Failures, "; "))
}

// Is reports whether target is [ErrInvalidAnswer].
func (e *AnswerError) Is(target error) bool { return target == ErrInvalidAnswer }

// RunTyped is [Agent.Run] ending with a value of type T instead of text.
// T's JSON Schema is inferred as [NewTool] infers a tool's. T must be a
// struct or a map, and a recursive type is refused. Field names follow
// json tags, descriptions the jsonschema tag, allowed values the enum tag.
// Fields without omitempty or omitzero are required. Tools stay available
// until the answer.
//
// The answer is validated against the schema and decoded strictly. An
// unknown field, a wrong type or a missing required field is sent back to
// the model with the exact reason, up to [WithMaxRepairs] times. Then the
// error is an [*AnswerError] holding the raw answer and every failure. T's
// zero value comes only with an error. [WithAnswerMode] says how the
// answer is asked for. By default the run picks the way the endpoint
// takes (see [AnswerAuto]).
//
// The agent's conversation keeps the whole exchange, repairs included.
// The turn limit applies to each answer asked for. The [Result] sums the
// turns, tool calls and usage of all of them and is never nil.
func RunTyped[T any](ctx context.Context, a *Agent, prompt string, opts ...RunOption) (T, *Result, error) {
	res, answer, err := a.typed(ctx, promptMessage(prompt), typedOnly(opts), reflect.TypeFor[T](), nil)
	if err != nil {
		return *new(T), res, err
	}
	return *answer.(*T), res, nil
}

// TypedEvent is an [Event] of [StreamTyped], with the answer as it fills
// in.
type TypedEvent[T any] struct {
	Event
	// Value holds, in an [EventPartial], the fields of the answer
	// complete so far. In the last event, of kind [EventDone], it holds the
	// validated answer, or the zero value after an error.
	Value T
}

// StreamTyped is [RunTyped] with every step reported as [Agent.Stream]
// reports it, and the answer as it arrives. Each time more fields are
// complete, an [EventPartial] event holds them. Text before the answer and
// a field still arriving are left out. This works whether the answer comes
// as text or as the arguments of the answer tool. The last event, of kind
// [EventDone], holds the validated answer and the [Result], paired with
// the run's error, if any.
//
// A partial value is decoded from the whole answer received so far. To
// keep the cost linear in the answer's length, a long answer's partial
// values come each time it has grown by an eighth.
func StreamTyped[T any](ctx context.Context, a *Agent, prompt string, opts ...RunOption) iter.Seq2[TypedEvent[T], error] {
	return func(yield func(TypedEvent[T], error) bool) {
		var misuse error
		switch {
		case a == nil:
			misuse = errNilAgent
		case ctx == nil:
			misuse = ErrNilContext
		}
		if misuse != nil {
			yield(TypedEvent[T]{Event: Event{Kind: EventDone, Result: new(Result)}}, misuse)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stopped := false
		send := func(e TypedEvent[T]) bool {
			if !stopped && !yield(e, nil) {
				stopped = true
				cancel()
			}
			return !stopped
		}
		var text, args jsonstream.Answer[T] // the answer as text, or as the answer tool's arguments
		tool := a.answerTool(ctx)
		emit := func(e Event) bool {
			if e.Kind == EventTurnEnd {
				text, args = jsonstream.Answer[T]{}, jsonstream.Answer[T]{}
			}
			if !send(TypedEvent[T]{Event: e}) {
				return false
			}
			partial := &text
			switch {
			case e.Kind == EventToolCallDelta && e.ToolCall.Name == tool:
				partial = &args
			case e.Kind != EventText:
				return true
			}
			if v, ok := partial.Add(e.Delta); ok {
				return send(TypedEvent[T]{Event: Event{Kind: EventPartial, Turn: e.Turn}, Value: v})
			}
			return true
		}
		res, answer, err := a.typed(ctx, promptMessage(prompt), typedOnly(opts), reflect.TypeFor[T](), emit)
		if stopped {
			return
		}
		done := TypedEvent[T]{Event: Event{Kind: EventDone, Turn: res.Turns, Result: res}}
		if err == nil {
			done.Value = *answer.(*T)
		}
		yield(done, err)
	}
}

// schemaRun is a run of Run, Stream, Resume or ResumeStream given
// [WithAnswerSchema]: it ends on an answer that fits the schema, whose JSON
// is the result's Text, or on calls of caller-run tools.
func (a *Agent) schemaRun(ctx context.Context, prompt messages, opts []RunOption, tc *typedConfig, emit func(Event) bool) (*Result, error) {
	if tc.schema == nil {
		return new(Result), errTypedOption
	}
	res, answer, err := a.typed(ctx, prompt, opts, rawMessageType, emit)
	if answer != nil {
		res.Text = string(*answer.(*json.RawMessage))
	}
	return res, err
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// typedOnly adds to the options of RunTyped and StreamTyped the refusal of
// caller-run tools: those runs end on their answer.
func typedOnly(opts []RunOption) []RunOption {
	return append(slices.Clip(opts), func(rc *runConfig) error {
		if len(rc.caller) > 0 {
			return errors.New("robby: WithCallerTools: a typed run cannot end on calls of the caller's tools")
		}
		return nil
	})
}

// typed runs the loop until the model gives an answer that fits the
// schema, repairing and falling back as tc says. It returns it decoded
// into a new value of type t, given as a pointer to it. It holds the
// conversation throughout, so no other run comes between an answer and
// its repair. A run with caller-run tools may end on their calls instead:
// then the answer is nil, and so is the error.
func (a *Agent) typed(ctx context.Context, prompt messages, opts []RunOption, t reflect.Type, emit func(Event) bool) (res *Result, answer any, err error) {
	res = new(Result)
	if a == nil {
		return res, nil, errNilAgent
	}
	if a.core.team != nil {
		return res, nil, errTeamRun
	}
	base, err := newRunConfig(opts)
	if err != nil {
		return res, nil, err
	}
	tc := base.typed
	if tc == nil {
		tc = &typedConfig{repairs: DefaultMaxRepairs}
	}
	as := tc.schema
	if as == nil {
		as = schemas.AnswerFor(t)
	}
	if as.Err != nil {
		return res, nil, fmt.Errorf("typed answer %v: %w", t, as.Err)
	}
	release, err := a.acquire(ctx)
	if err != nil {
		return res, nil, err
	}
	defer release()
	ctx, op := a.core.tel.startRun(ctx, a.model(&base), base.tool)
	defer func() { op.end(ctx, res, err) }()
	ctx = a.core.metered(ctx, Budget{}) // one budget for every answer asked for
	mode, auto := tc.mode, tc.mode == AnswerAuto
	if auto {
		mode = a.autoMode(ctx)
	}
	tool := a.answerTool(ctx)
	pending, results := prompt, base.results
	for attempt := 1; ; {
		rc := answerRun(base, mode, as, tool, results)
		r, err := a.runHeld(ctx, pending, &rc, offsetTurns(emit, res.Turns))
		res.merge(r)
		if err != nil {
			if next, ok := nextAnswerMode(mode, err); auto && ok && r.Turns <= 1 {
				a.core.log.InfoContext(ctx, "robby: the endpoint refused the answer mode; falling back",
					slog.String("mode", mode.String()), slog.String("next", next.String()), slog.Any("error", err))
				a.core.answerMode.Store(int32(next))
				mode = next
				continue
			}
			return res, nil, err
		}
		if callerCalls(r.Pending, tool) {
			res.Pending = r.Pending
			return res, nil, nil // the caller runs them, and the run goes on later
		}
		raw, callID := answerText(mode, r, tool)
		answer := reflect.New(t).Interface()
		failures := as.Check(raw, answer)
		if len(failures) == 0 {
			if callID != "" {
				// The answer tool's call needs its result, or the next
				// request of the conversation would be refused.
				var done messages
				done.add(toolMessage(ToolResult{Call: ToolCall{ID: callID}, Output: "Answer accepted."}))
				a.addMessages(done)
				res.Messages = append(res.Messages, done.list...)
			}
			return res, answer, nil
		}
		if attempt > tc.repairs {
			return res, nil, &AnswerError{Mode: mode, Raw: string(raw), Failures: failures, Attempts: attempt}
		}
		attempt++
		pending, results = repairMessage(mode, tool, callID, failures)
	}
}

// callerCalls reports whether a run ended on calls of caller-run tools
// other than the answer tool.
func callerCalls(pending []ToolCall, tool string) bool {
	for _, c := range pending {
		if c.Name != tool {
			return true
		}
	}
	return false
}

// answerText finds the answer in a run's result: the arguments of the
// answer tool's call, or the JSON object of the text. A model may answer
// with text when it has the answer tool. It is taken at its word if the
// text holds the answer.
func answerText(mode AnswerMode, r *Result, tool string) (raw []byte, callID string) {
	for _, c := range r.Pending {
		if c.Name == tool {
			return []byte(c.Arguments), c.ID
		}
	}
	text := strings.TrimSpace(r.Text)
	if mode == AnswerNative && json.Valid([]byte(text)) {
		return []byte(text), ""
	}
	if obj, ok := jsonstream.Extract(text); ok {
		return obj, ""
	}
	return []byte(text), ""
}

// repairMessage tells the model what is wrong with its answer. It is the
// answer tool's result if the model called it, else a user message.
func repairMessage(mode AnswerMode, tool, callID string, failures []string) (messages, []ToolResult) {
	var b strings.Builder
	b.WriteString("Your answer does not fit the required JSON Schema:\n")
	for _, f := range failures {
		b.WriteString("- " + f + "\n")
	}
	switch {
	case callID != "":
		b.WriteString("Call " + tool + " again with the corrected answer.")
		return messages{}, []ToolResult{{Call: ToolCall{ID: callID}, Output: b.String()}}
	case mode == AnswerTool:
		b.WriteString("Give the answer by calling " + tool + ".")
	default:
		b.WriteString("Answer again with the corrected JSON object only.")
	}
	return promptMessage(b.String()), nil
}

// offsetTurns numbers the events of a later answer after the turns before.
func offsetTurns(emit func(Event) bool, turns int) func(Event) bool {
	if emit == nil || turns == 0 {
		return emit
	}
	return func(e Event) bool {
		e.Turn += turns
		return emit(e)
	}
}

// merge adds the work of a later run to r.
func (r *Result) merge(o *Result) {
	r.Text, r.Reasoning = o.Text, o.Reasoning
	r.Messages = append(r.Messages, o.Messages...)
	r.Turns += o.Turns
	r.Models = append(r.Models, o.Models...)
	r.ToolCalls = append(r.ToolCalls, o.ToolCalls...)
	r.Usage.add(o.Usage)
}
