package robby

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/robby-go/robby/internal/chatwire"
	sjson "github.com/segmentio/encoding/json"

	"github.com/openai/openai-go/v3"
	"github.com/robby-go/robby/internal/tokens"
)

// messages are messages with the JSON of the first len(raw) of them. So
// each is encoded once in a conversation's life.
type messages struct {
	list []openai.ChatCompletionMessageParamUnion
	raw  []json.RawMessage // raw[i] encodes list[i]
	tok  []int             // tok[i] estimates the tokens of raw[i], for compaction
}

// add appends m, with raw as its JSON when every message before it has its
// own. A nil raw means not encoded yet.
func (ms *messages) add(m openai.ChatCompletionMessageParamUnion, raw json.RawMessage) {
	if raw != nil && len(ms.raw) == len(ms.list) {
		ms.raw = append(ms.raw, raw)
	}
	ms.list = append(ms.list, m)
}

// addAll appends other, with the JSON it has.
func (ms *messages) addAll(other messages) {
	if len(ms.raw) == len(ms.list) {
		ms.raw = append(ms.raw, other.raw...)
	}
	ms.list = append(ms.list, other.list...)
}

// encoded returns the JSON of every message, encoding those that have
// none yet. The slice shares no writable memory with ms.
func (ms *messages) encoded() ([]json.RawMessage, error) {
	raw, err := chatwire.EncodeMessages(ms.raw, ms.list)
	ms.raw = raw
	return raw[:len(raw):len(raw)], err
}

// tokens returns the estimated tokens of the first n encoded messages,
// counting those not counted yet.
func (ms *messages) tokens(n int) []int {
	for i := len(ms.tok); i < n; i++ {
		ms.tok = append(ms.tok, tokens.Count(ms.raw[i]))
	}
	return ms.tok
}

func (ms messages) clone() messages {
	return messages{list: slices.Clone(ms.list), raw: slices.Clone(ms.raw), tok: slices.Clone(ms.tok)}
}

// Messages returns a copy of the conversation, the system prompt first.
// The messages share memory with the conversation's: do not modify them.
func (a *Agent) Messages() []openai.ChatCompletionMessageParamUnion {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.conv.list)
}

// AddMessages appends messages to the conversation, such as
// openai.UserMessage before [Agent.ChatCompletion]. The conversation keeps
// them as they are: do not modify them afterwards.
func (a *Agent) AddMessages(msgs ...openai.ChatCompletionMessageParamUnion) {
	a.addMessages(messages{list: msgs})
}

// AddTeamMessages appends messages to the conversation of a team's root
// ([WithTeam]), each marked with the agent of the team that wrote it or took
// it in: agents[i] is msgs[i]'s, as [Result.Agents] names them, "" for none.
// So the next run starts with the agent that holds the conversation, as it
// does in the conversation the messages came from. Messages past agents
// have none.
func (a *Agent) AddTeamMessages(agents []string, msgs ...openai.ChatCompletionMessageParamUnion) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(agents) > 0 {
		a.tags = append(a.tags, make([]string, len(a.conv.list)-len(a.tags))...)
		a.tags = append(a.tags, agents[:min(len(agents), len(msgs))]...)
	}
	a.conv.addAll(messages{list: msgs})
}

// addMessages appends messages with the JSON they have.
func (a *Agent) addMessages(ms messages) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.conv.addAll(ms)
}

// SetMessages replaces the whole conversation, system prompt included. The
// conversation keeps the messages as they are: do not modify them
// afterwards.
func (a *Agent) SetMessages(msgs []openai.ChatCompletionMessageParamUnion) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.conv, a.tags = messages{list: slices.Clone(msgs)}, nil
}

// Reset brings the conversation back to how [New] began it: the system
// prompt and the messages of [WithParams]. Its [Agent.Usage] starts again
// from zero.
func (a *Agent) Reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.conv, a.tags = a.core.initial.clone(), nil
	a.usage, a.unsaved = Usage{}, Usage{}
}

// Usage returns the tokens and cost of every model call made for the
// conversation since [New], [Agent.Clone] or [Agent.Reset]. That is the
// turns of every run, the building blocks' calls, the summaries of
// [WithCompaction], and the calls of the agents its tools ran
// ([Agent.AsTool], [AgentTool]). A clone starts from zero. After a run
// bound to a stored conversation ([WithConversation]), it is that
// conversation's usage. That is [Conversation.Usage] as the run loaded it,
// from every process that wrote it, plus the calls of the run since.
func (a *Agent) Usage() Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.usage
}

// awaiting returns the calls of the conversation that await a result.
func (a *Agent) awaiting() []ToolCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return awaiting(a.conv.list)
}

// encodedHistory returns the conversation encoded, and how many system
// (or developer) messages open it. The slice shares no writable memory
// with the agent's.
func (a *Agent) encodedHistory() (raw []json.RawMessage, lead int, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for lead < len(a.conv.list) && (a.conv.list[lead].OfSystem != nil || a.conv.list[lead].OfDeveloper != nil) {
		lead++
	}
	raw, err = a.conv.encoded()
	return raw, lead, err
}

// promptMessage is the user message of a run's prompt.
func promptMessage(prompt string) messages {
	var ms messages
	ms.add(openai.UserMessage(prompt), chatwire.UserJSON(prompt))
	return ms
}

// awaiting returns the calls of the conversation's last assistant message
// that no tool message answers. They are those a run ended on, or those
// of [Agent.ToolsCompletion] not executed yet.
func awaiting(conv []openai.ChatCompletionMessageParamUnion) []ToolCall {
	var answered map[string]bool
	for i := len(conv) - 1; i >= 0; i-- {
		m := &conv[i]
		if m.OfTool != nil {
			if answered == nil {
				answered = make(map[string]bool)
			}
			answered[m.OfTool.ToolCallID] = true
			continue
		}
		if m.OfAssistant == nil {
			return nil
		}
		var calls []ToolCall
		for _, tc := range m.OfAssistant.ToolCalls {
			if f := tc.OfFunction; f != nil && !answered[f.ID] {
				calls = append(calls, ToolCall{ID: f.ID, Name: f.Function.Name, Arguments: f.Function.Arguments})
			}
		}
		return calls
	}
	return nil
}

// systemJSON encodes openai.SystemMessage(text).
func systemJSON(text string) json.RawMessage {
	b := make([]byte, 0, len(text)+32)
	b = append(b, `{"role":"system","content":`...)
	b = sjson.AppendEscape(b, text, 0)
	return append(b, '}')
}

// userText is the text of a user message: its content, or its text parts
// joined.
func userText(m *openai.ChatCompletionUserMessageParam) string {
	if m.Content.OfString.Valid() {
		return m.Content.OfString.Value
	}
	var b strings.Builder
	for _, p := range m.Content.OfArrayOfContentParts {
		if p.OfText != nil {
			b.WriteString(p.OfText.Text)
		}
	}
	return b.String()
}

// redactInput replaces the i-th input message, at from in the
// conversation or in prompt, by a user message of text. Its other parts
// (images, files) are kept.
func (a *Agent) redactInput(prompt *messages, from, i int, text string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ms, at := &a.conv, from+i
	if prompt.list != nil {
		ms, at = prompt, i
	}
	old := ms.list[at].OfUser
	m := openai.UserMessage(text)
	if parts := old.Content.OfArrayOfContentParts; parts != nil {
		kept := []openai.ChatCompletionContentPartUnionParam{openai.TextContentPart(text)}
		for _, p := range parts {
			if p.OfText == nil {
				kept = append(kept, p)
			}
		}
		m = openai.UserMessage(kept)
	}
	ms.list[at] = m
	ms.raw = ms.raw[:min(len(ms.raw), at)] // encoded again when sent
	ms.tok = ms.tok[:min(len(ms.tok), at)]
}

// rawAt returns the JSON of ms's message i, nil if it has none yet.
func rawAt(ms messages, i int) json.RawMessage {
	if i < len(ms.raw) {
		return ms.raw[i]
	}
	return nil
}

// activeCore returns the agent that holds the conversation: the one that
// wrote its last message, or the root if that one returns to it and
// answered, or if none wrote one or it left the team.
func (a *Agent) activeCore() *core {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := len(a.tags) - 1; i >= 0; i-- {
		if a.tags[i] == "" {
			continue
		}
		c := a.core.team.agents[a.tags[i]]
		if m := a.conv.list[i].OfAssistant; c == nil || c.returnToRoot && m != nil && len(m.ToolCalls) == 0 { // it answered
			return a.core
		}
		return c
	}
	return a.core
}
