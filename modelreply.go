package robby

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/robby-go/robby/internal/chatwire"

	"github.com/robby-go/robby/internal/jsonstream"

	"github.com/openai/openai-go/v3"
	"github.com/robby-go/robby/internal/randid"
)

// A reply is one assistant message, put together from a stream or read from
// a plain response.
type reply struct {
	text      strings.Builder
	reasoning strings.Builder
	calls     []*callBuilder
	finish    string
	usage     Usage
	args      []argDelta                // the pieces of arguments the last chunk added
	model     string                    // the model that answered
	extras    map[string]map[string]any // provider fields by final call id, set by toolCalls
}

// callBuilder collects the deltas of one tool call.
type callBuilder struct {
	index    int64
	hasIndex bool
	id       string
	name     string
	args     jsonstream.Args
	extra    map[string]any // provider fields to send back, such as Gemini's extra_content
	eventID  string         // the id its argument fragments were given: see nameCall
	seen     *ToolCall      // the call as its fragments' events show it
}

// shown returns the call as the events of its fragments show it: its id
// and name. Events share it until the name changes. Then it makes another,
// so one they hold never changes.
func (b *callBuilder) shown() *ToolCall {
	if b.seen == nil || b.seen.Name != b.name {
		b.seen = &ToolCall{ID: b.eventID, Name: b.name}
	}
	return b.seen
}

// addChunk folds one streamed chunk into the reply. It returns the text
// and reasoning it added. Only the first choice is read: robby never asks
// for more than one.
func (r *reply) addChunk(c *chatwire.Response) (text, reasoning string) {
	r.args = r.args[:0]
	if u := c.Usage; u != nil && (u.TotalTokens > 0 || u.PromptTokens > 0 || u.CompletionTokens > 0) {
		// Some providers repeat usage; the last one is the total.
		r.usage = usageOf(c.Usage, c.Timings)
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue
		}
		if ch.FinishReason != "" {
			r.finish = string(ch.FinishReason)
		}
		d := &ch.Delta
		text = string(d.Content)
		if text == "" {
			text = string(d.Refusal)
		}
		r.text.WriteString(text)
		reasoning = d.ReasoningText()
		r.reasoning.WriteString(reasoning)
		for j := range d.ToolCalls {
			r.addToolDelta(&d.ToolCalls[j])
		}
		break // only the first choice of index 0
	}
	return text, reasoning
}

// addToolDelta finds the call a delta belongs to. Providers disagree.
// OpenAI sends id and name once, then fragments by index. Ollama may give
// every parallel call index 0 with its own id. Gemini sends no index and
// maybe no id. LM Studio sends a new id on every fragment. vLLM repeats id
// and name in its last chunk. The rule: a delta continues the call with
// its id, else the last call with its index (or the last call). It does
// not if it names a new function or that call's arguments are complete.
func (r *reply) addToolDelta(d *chatwire.ToolCall) {
	id, name, args := string(d.ID), string(d.Function.Name), string(d.Function.Arguments)
	if args == "null" {
		args = ""
	}
	b := r.findCall(id, d.HasPos, d.Pos)
	if b != nil && b.startsAnother(id, name, args) {
		b = nil
	}
	if b == nil {
		b = &callBuilder{index: d.Pos, hasIndex: d.HasPos}
		r.calls = append(r.calls, b)
	}
	if b.id == "" {
		b.id = id
	}
	if b.name == "" {
		b.name = name
	}
	if added := b.addArguments(args); added != "" {
		r.nameCall(b)
		r.args = append(r.args, argDelta{b, added})
	}
	for k, v := range d.Extra {
		if b.extra == nil {
			b.extra = make(map[string]any)
		}
		b.extra[k] = v
	}
}

// nameCall gives b, on its first argument fragment, the id by which the
// fragments' events name it. The id is kept to the end, so the call runs
// with it. It is the provider's id if it has a usable one by then, else a
// new one.
func (r *reply) nameCall(b *callBuilder) {
	if b.eventID != "" {
		return
	}
	b.eventID = b.id
	if b.id == "" || !utf8.ValidString(b.id) || slices.ContainsFunc(r.calls, func(o *callBuilder) bool {
		return o != b && (o.id == b.id || o.eventID == b.id)
	}) {
		b.eventID = newCallID()
	}
}

func (r *reply) findCall(id string, hasIndex bool, index int64) *callBuilder {
	if id != "" {
		for _, b := range r.calls {
			if b.id == id {
				return b
			}
		}
	}
	for i := len(r.calls) - 1; i >= 0; i-- {
		if b := r.calls[i]; !hasIndex || !b.hasIndex || b.index == index {
			return b
		}
	}
	return nil
}

// startsAnother reports whether a delta found to belong to b is in fact
// the start of a new call.
func (b *callBuilder) startsAnother(id, name, args string) bool {
	switch {
	case name != "" && b.name != "" && name != b.name:
		return true // another function
	case name != "" && b.name != "" && b.complete():
		// The same function again: a repeat of the call (vLLM's last
		// chunk) keeps its id. A new call of it does not.
		return id == "" || id != b.id || strings.TrimSpace(args) != "" && !b.repeatsArguments(args)
	case id != "" && b.id != "" && id != b.id:
		// A new id without a name is LM Studio's fragment; with a
		// name it is another call.
		return name != "" || b.complete() && args != "" && !b.repeatsArguments(args)
	}
	return false
}

// complete reports whether the arguments so far are a whole JSON value.
func (b *callBuilder) complete() bool { return b.args.Complete() }

// addArguments appends a fragment and returns what it added to the
// arguments. It skips the whole of the arguments sent again after all or
// part of them (vLLM's and xLAM's final flush). Each fragment costs time
// in proportion to its own length (and to what it repeats), never to the
// arguments so far.
func (b *callBuilder) addArguments(args string) (added string) {
	n := b.args.Len()
	switch {
	case b.repeatsArguments(args):
		return ""
	case n > 0 && len(args) > n && !b.complete() && b.args.HasPrefixOf(args) && json.Valid([]byte(args)):
		b.args.Reset(args)
		return args[n:]
	default:
		b.args.Write(args)
		return args
	}
}

// repeatsArguments reports whether args is the whole of what b already
// has. Some vLLM parsers send it once more in their final chunk.
func (b *callBuilder) repeatsArguments(args string) bool {
	return args != "" && b.complete() && b.args.Equals(args)
}

// toolCalls returns the calls with their arguments made usable. No
// arguments at all become {}. A missing, repeated or invalid UTF-8 id is
// replaced by a new one, used from then on in the tool message too.
func (r *reply) toolCalls() []ToolCall {
	calls := make([]ToolCall, len(r.calls))
	seen := make(map[string]bool, len(r.calls))
	for i, b := range r.calls {
		id := b.id
		if b.eventID != "" {
			id = b.eventID // the id the call's events gave it
		}
		// A repeated id, or one that would not survive JSON encoding,
		// could not pair the call with its result.
		if id == "" || seen[id] || !utf8.ValidString(id) {
			id = newCallID()
		}
		seen[id] = true
		if b.extra != nil {
			if r.extras == nil {
				r.extras = make(map[string]map[string]any)
			}
			r.extras[id] = b.extra
		}
		args := strings.TrimSpace(b.args.Text())
		if args == "" || args == "null" {
			args = "{}"
		}
		calls[i] = ToolCall{ID: id, Name: b.name, Arguments: args}
	}
	return calls
}

// newCallID makes a tool-call id of 9 letters and digits. It is the one
// format every provider's chat template accepts (Mistral's checks for it).
func newCallID() string { return randid.Alnum(9) }

// message returns the assistant message to keep in the conversation, with
// its JSON (nil if it could not be encoded here). Its reasoning is left
// out: providers reject it when it is sent back.
func (r *reply) message(calls []ToolCall) (openai.ChatCompletionMessageParamUnion, json.RawMessage) {
	var m openai.ChatCompletionAssistantMessageParam
	if text := r.text.String(); text != "" || len(calls) == 0 {
		m.Content.OfString = openai.String(text)
	}
	for _, c := range calls {
		p := openai.ChatCompletionMessageFunctionToolCallParam{
			ID:       c.ID,
			Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Arguments},
		}
		if extra := r.extras[c.ID]; extra != nil {
			p.SetExtraFields(extra)
		}
		m.ToolCalls = append(m.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &p})
	}
	raw, _ := chatwire.AssistantJSON(r.text.String(), calls, r.extras)
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &m}, raw
}

// replyOf reads a plain (not streamed) response.
func replyOf(c *chatwire.Response) (*reply, error) {
	var r reply
	if c.Usage != nil {
		r.usage = usageOf(c.Usage, c.Timings)
	}
	if len(c.Choices) == 0 {
		return nil, ErrNoChoices
	}
	ch := &c.Choices[0]
	r.finish = string(ch.FinishReason)
	m := &ch.Message
	r.text.WriteString(string(m.Content))
	if m.Content == "" {
		r.text.WriteString(string(m.Refusal))
	}
	r.reasoning.WriteString(m.ReasoningText())
	for _, tc := range m.ToolCalls {
		if tc.Type == "custom" {
			return nil, fmt.Errorf("robby: custom tool call %q is not supported", tc.Custom.Name)
		}
		b := &callBuilder{id: string(tc.ID), name: string(tc.Function.Name), extra: tc.Extra}
		b.args.Write(string(tc.Function.Arguments))
		r.calls = append(r.calls, b)
	}
	return &r, nil
}

// usageOf returns the usage the provider reported, with the timings sent
// beside it.
func usageOf(u *chatwire.Usage, t chatwire.Timings) Usage {
	prompt, total := int64(u.PromptTokens), int64(u.TotalTokens)
	cached := int64(u.PromptTokensDetails.CachedTokens)
	if cached == 0 {
		cached = int64(max(u.PromptCacheHitTokens, t.CacheN))
	}
	completion, reasoning := int64(u.CompletionTokens), int64(u.CompletionTokensDetails.ReasoningTokens)
	if reasoning > 0 && addTokens(addTokens(prompt, completion), reasoning) == total {
		// Some (Gemini's endpoint, some proxies) count the reasoning
		// apart, as their total shows. OpenAI counts it in the completion,
		// which is what it is billed as.
		completion = addTokens(completion, reasoning)
	}
	return Usage{
		PromptTokens: prompt, CompletionTokens: completion, TotalTokens: total,
		CachedPromptTokens: cached, ReasoningTokens: reasoning,
	}
}

// A deltaFunc receives what each streamed chunk added to the reply. An
// error it returns stops the stream.
type deltaFunc func(d *delta) error

// A delta is what one streamed chunk added to a reply.
type delta struct {
	text, reasoning string
	args            []argDelta // the pieces of calls' arguments
}

// An argDelta is a piece of a call's arguments.
type argDelta struct {
	call     *callBuilder
	fragment string
}

// response returns the reply as a [ModelResponse], its calls given their
// final IDs. It returns nil for nil.
func (r *reply) response() *ModelResponse {
	if r == nil {
		return nil
	}
	calls := r.toolCalls()
	return &ModelResponse{Model: r.model, Text: r.text.String(), Reasoning: r.reasoning.String(), ToolCalls: calls,
		FinishReason: r.finish, Usage: r.usage, extras: r.extras}
}
