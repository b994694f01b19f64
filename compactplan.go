package robby

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	sjson "github.com/segmentio/encoding/json"

	"github.com/robby-go/robby/internal/chattext"
	"github.com/robby-go/robby/internal/chatwire"
	"github.com/robby-go/robby/internal/tokens"
	"github.com/robby-go/robby/internal/trunc"
)

// A plan is what one request will send of the conversation. First come the
// pinned messages: the leading system messages, and the first user message if
// pinned. Then a summary if there is one, the messages from cut on, the
// pending messages and the tools. Messages cut to fit replace theirs.
type plan struct {
	history []json.RawMessage
	list    []openai.ChatCompletionMessageParamUnion
	est     []int
	pending []json.RawMessage
	pendTok []int
	toolTok int // the tools', and the run's system message's

	system     int // history[:system] are the leading system messages
	first      int // the pinned first user message, or -1
	cut        int // history[system:cut] are not sent, but for first
	summary    json.RawMessage
	sumTok     int
	custom     []json.RawMessage // what a CompactFunc chose to send instead
	customLead int               // the system messages that open it
	// replaced are messages cut to fit, by their place in what is sent.
	replaced map[int]json.RawMessage
	saved    int // tokens the cuts saved
}

// replyTokens are the tokens of the reply's opening that a provider
// counts in the prompt.
const replyTokens = 3

func newPlan(req *request, list []openai.ChatCompletionMessageParamUnion, est []int, pinFirst bool, st *compactState) *plan {
	p := &plan{history: req.history, list: list, est: est, pending: req.pending, first: -1}
	for _, t := range [...][]json.RawMessage{req.tools, req.caller, req.system} {
		for _, raw := range t {
			p.toolTok += tokens.Count(raw)
		}
	}
	p.pendTok = make([]int, len(req.pending))
	for i, raw := range req.pending {
		p.pendTok[i] = tokens.Count(raw)
	}
	for p.system < len(list) && (list[p.system].OfSystem != nil || list[p.system].OfDeveloper != nil) {
		p.system++
	}
	if pinFirst {
		for i := p.system; i < len(list); i++ {
			if list[i].OfUser != nil {
				p.first = i
				break
			}
		}
	}
	p.cut = p.system
	if st.cut > p.system && validCut(req.history, st.cut, st.cutAt) {
		p.cut, p.summary, p.sumTok = st.cut, st.summary, st.sumTok
	}
	return p
}

func (p *plan) pinned(i int) bool { return i < p.system || i == p.first }

// total is the request's estimated tokens.
func (p *plan) total() int {
	n := p.toolTok + replyTokens - p.saved
	if p.custom != nil {
		for _, raw := range p.custom {
			n += tokens.Count(raw)
		}
		return n
	}
	for i := range p.history {
		if i >= p.cut || p.pinned(i) {
			n += p.est[i]
		}
	}
	for _, t := range p.pendTok {
		n += t
	}
	return n + p.sumTok
}

// messages counts the messages sent.
func (p *plan) messages() int {
	if p.custom != nil {
		return len(p.custom)
	}
	n := p.system + len(p.history) - p.cut + len(p.pending)
	if p.first >= 0 && p.first < p.cut {
		n++
	}
	if p.summary != nil {
		n++
	}
	return n
}

// cutAt marks the cut: the first byte of the last message left out.
func (p *plan) cutAt() *byte {
	if p.cut == 0 || len(p.history[p.cut-1]) == 0 {
		return nil
	}
	return &p.history[p.cut-1][0]
}

// sent returns the messages the request sends, history and pending in one
// list, without the cuts of replaced. It allocates only when the plan
// leaves something out.
func (p *plan) sent() []json.RawMessage {
	if p.custom != nil {
		return p.custom
	}
	if p.cut == p.system && p.summary == nil && len(p.pending) == 0 {
		return p.history
	}
	out := make([]json.RawMessage, 0, p.messages())
	out = append(out, p.history[:p.system]...)
	if p.first >= 0 && p.first < p.cut {
		out = append(out, p.history[p.first])
	}
	if p.summary != nil {
		out = append(out, p.summary)
	}
	out = append(out, p.history[p.cut:]...)
	return append(out, p.pending...)
}

// apply makes req send what the plan sends.
func (p *plan) apply(req *request) {
	if p.custom == nil && p.cut == p.system && p.summary == nil && len(p.replaced) == 0 {
		return // all of it, as it is
	}
	out := p.sent()
	req.lead = p.system
	if p.custom != nil {
		req.lead = p.customLead
	}
	if len(p.replaced) > 0 {
		if len(p.pending) == 0 && p.custom == nil && p.cut == p.system && p.summary == nil {
			out = append([]json.RawMessage(nil), out...) // history is the conversation's own
		}
		for i, raw := range p.replaced {
			out[i] = raw
		}
	}
	req.history, req.pending = out, nil
}

// boundary reports whether the request may start sending at history[k], after
// the pinned messages. A tool result never goes without the call before it.
func (p *plan) boundary(k int) bool {
	return k == len(p.history) || p.list[k].OfTool == nil
}

// dropTo moves the cut forward, whole turns at a time, until the request is
// within limit. It stops when only the last turn is left. It returns what it
// left out, from the old cut to the new, pinned messages excepted.
func (p *plan) dropTo(limit int, ev *Compaction) (from, to int) {
	last := len(p.history) // the last cut allowed: keep the last turn
	if len(p.pending) == 0 {
		for last = len(p.history) - 1; last > p.cut && !p.boundary(last); last-- {
		}
	}
	from = p.cut
	cur := p.total()
	for cur > limit && p.cut < last {
		j := p.cut + 1
		for j < last && !p.boundary(j) {
			j++
		}
		for i := p.cut; i < j; i++ {
			if p.pinned(i) {
				continue
			}
			cur -= p.est[i]
			ev.MessagesDropped++
			if p.list[i].OfAssistant != nil {
				ev.TurnsDropped++
			}
		}
		p.cut = j
	}
	return from, p.cut
}

func (p *plan) drop(target int, ev *Compaction) { p.dropTo(target, ev) }

// custom has fn choose what to send.
func (p *plan) compactWith(ctx context.Context, fn CompactFunc, budget int, ev *Compaction) error {
	all := make([]openai.ChatCompletionMessageParamUnion, 0, len(p.list)+len(p.pending))
	all = append(all, p.list...)
	for _, raw := range p.pending {
		m, err := chatwire.DecodeMessage(raw)
		if err != nil {
			return fmt.Errorf("compaction: reading a pending message: %w", err)
		}
		all = append(all, m)
	}
	msgs, err := fn(ctx, all, budget)
	if err != nil {
		return fmt.Errorf("compaction function: %w", err)
	}
	if err := checkToolPairs(msgs); err != nil {
		return fmt.Errorf("compaction function: %w", err)
	}
	p.custom = make([]json.RawMessage, len(msgs))
	for p.customLead < len(msgs) && (msgs[p.customLead].OfSystem != nil || msgs[p.customLead].OfDeveloper != nil) {
		p.customLead++
	}
	for i, m := range msgs {
		if p.custom[i], err = m.MarshalJSON(); err != nil {
			return fmt.Errorf("compaction function: message %d: %w", i, err)
		}
	}
	ev.MessagesDropped = max(0, len(all)-len(msgs))
	return nil
}

// checkToolPairs reports a tool call without its result, or a result of
// no call before it.
func checkToolPairs(msgs []openai.ChatCompletionMessageParamUnion) error {
	open := map[string]bool{}
	for i, m := range msgs {
		switch {
		case m.OfAssistant != nil:
			if len(open) > 0 {
				return fmt.Errorf("robby: message %d: a tool call before it has no result", i)
			}
			for _, c := range m.OfAssistant.ToolCalls {
				if id := c.GetID(); id != nil {
					open[*id] = true
				}
			}
		case m.OfTool != nil:
			if !open[m.OfTool.ToolCallID] {
				return fmt.Errorf("robby: message %d: the result of tool call %q, which no message before it made", i, m.OfTool.ToolCallID)
			}
			delete(open, m.OfTool.ToolCallID)
		default:
			if len(open) > 0 {
				return fmt.Errorf("robby: message %d: a tool call before it has no result", i)
			}
		}
	}
	if len(open) > 0 {
		return errors.New("robby: the last tool calls have no result")
	}
	return nil
}

// cutLarge shortens the largest messages sent, with a note, until the request
// is within limit. It handles what one message alone makes too large.
func (p *plan) cutLarge(limit int) int {
	over := p.total() - limit
	if over <= 0 {
		return 0
	}
	sent := p.sent()
	tried := map[int]bool{}
	n := 0
	for over > 0 {
		big, bigTok := -1, 0
		for i, raw := range sent {
			if t := tokens.Count(raw); !tried[i] && t > bigTok {
				big, bigTok = i, t
			}
		}
		if big < 0 || bigTok <= minKept {
			return n
		}
		tried[big] = true
		raw, ok := cutMessage(sent[big], bigTok, max(minKept, bigTok-over))
		if !ok {
			continue
		}
		if p.replaced == nil {
			p.replaced = map[int]json.RawMessage{}
		}
		p.replaced[big] = raw
		saved := bigTok - tokens.Count(raw)
		p.saved += saved
		over -= saved
		n++
	}
	return n
}

// minKept is the fewest tokens a cut message keeps.
const minKept = 32

// cutMessage shortens a message whose content is text to about keep of
// its tokens, with a note saying so.
func cutMessage(raw json.RawMessage, had, keep int) (json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	var content string
	if json.Unmarshal(raw, &fields) != nil || json.Unmarshal(fields["content"], &content) != nil || content == "" {
		return nil, false
	}
	note := fmt.Sprintf("\n[robby: cut to fit the context window: about %d of %d tokens shown]", keep, had)
	n := max(0, len(content)*(keep-tokens.String(note))/had)
	b := make([]byte, 0, n+len(note)+2)
	b = sjson.AppendEscape(b, trunc.Cut(content, n)+note, 0)
	fields["content"] = b
	out, err := json.Marshal(fields)
	return out, err == nil
}

// A wireMessage is what compaction reads of a message's JSON.
type wireMessageText struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// transcript renders messages as text, for the model to summarise.
func transcript(msgs []json.RawMessage) string {
	var b strings.Builder
	for _, raw := range msgs {
		var m wireMessageText
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		if text := chattext.Content(m.Content); text != "" {
			fmt.Fprintf(&b, "%s: %s\n", m.Role, text)
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "%s called %s(%s)\n", m.Role, c.Function.Name, c.Function.Arguments)
		}
	}
	return b.String()
}

// compactState is what an agent remembers of the compaction of its
// conversation between requests. Only the operation holding the
// conversation (see Agent.acquire) changes it, holding Agent.mu too, so
// that Clone may copy it.
type compactState struct {
	cut     int   // the first message sent after the pinned ones
	cutAt   *byte // the first byte of history[cut-1]'s JSON, to tell the conversation is still the one cut
	summary json.RawMessage
	sumTok  int

	// The last request that got an answer, for the provider's count.
	last struct {
		cut    int
		at     *byte
		n      int // messages sent
		est    int // robby's estimate
		prompt int // the provider's count, 0 if unknown
	}
}

// valid reports whether a cut at cut, marked by at, still applies to
// history.
func validCut(history []json.RawMessage, cut int, at *byte) bool {
	return cut == 0 || cut <= len(history) && len(history[cut-1]) > 0 && &history[cut-1][0] == at
}
