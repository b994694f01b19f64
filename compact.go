package robby

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/robby-go/robby/internal/chatwire"

	"github.com/robby-go/robby/internal/llmserver"

	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby/internal/tokens"
)

// Compaction keeps long conversations inside the model's context window. The
// conversation itself keeps every message (Messages, a store). Only what a
// request sends shrinks. The request is made of the conversation's encoded
// messages as they are. Compaction chooses which of them go. It re-encodes
// nothing but a summary or a message it has to cut.

// A CompactionPolicy says how a conversation that outgrows the token budget
// is shortened. Build one with [DropOldestTurns], [SummarizeOldTurns] or
// [CompactWith], and give it to [WithCompaction].
type CompactionPolicy struct {
	kind compactKind
	fn   CompactFunc
}

type compactKind int

const (
	compactDrop compactKind = iota + 1
	compactSummarize
	compactFunc
)

var compactNames = [...]string{"", "drop", "summarize", "func"}

// String returns the policy's name: "drop", "summarize" or "func".
func (p CompactionPolicy) String() string { return compactNames[p.kind] }

// DropOldestTurns drops the oldest whole turns. A turn is a user message with
// the answers and tool calls that followed it, or one model turn with its
// tool results. A tool call is never sent without its result. The system
// prompt is always kept. The first user message is kept too with
// [WithPinnedFirstMessage]. It costs no model call.
func DropOldestTurns() CompactionPolicy { return CompactionPolicy{kind: compactDrop} }

// SummarizeOldTurns replaces the oldest turns with a summary the model
// writes. It costs one more model request each time the conversation outgrows
// the budget again. The summary is sent as a system message starting with
// [SummaryMarker], after the system prompt. It takes the place of the turns
// it sums up, and of the summary before it. If the summary request fails, the
// oldest turns are dropped instead.
func SummarizeOldTurns() CompactionPolicy { return CompactionPolicy{kind: compactSummarize} }

// CompactWith has fn choose what a request sends when the conversation
// outgrows the budget.
func CompactWith(fn CompactFunc) CompactionPolicy { return CompactionPolicy{kind: compactFunc, fn: fn} }

// A CompactFunc gets the messages a request would send, system prompt first,
// and the budget in tokens. It returns the messages to send instead. Each
// tool call it keeps must keep its results. [EstimateTokens] counts tokens as
// robby does. An error ends the run.
type CompactFunc func(ctx context.Context, msgs []openai.ChatCompletionMessageParamUnion, budget int) ([]openai.ChatCompletionMessageParamUnion, error)

// SummaryMarker begins the system message that carries a summary of
// earlier turns (see [SummarizeOldTurns]).
const SummaryMarker = "[Summary of the earlier conversation]\n"

// WithCompaction has the agent fit every request into its token budget with
// policy. The budget is the model's context window ([WithContextWindow], or
// as the provider reports it) minus room for the answer. That room is the
// request's max_completion_tokens or max_tokens, or a quarter of the window
// up to 4,096 tokens. A request over the budget is compacted down to three
// quarters of it. So the next turns fit as they are, and providers can reuse
// their cache of the prompt.
//
// With or without a policy, a provider's context-length error is reported as
// a [*ContextLengthError]. With a policy, the request is first compacted
// again, to the size the provider's error gives, and sent once more.
func WithCompaction(policy CompactionPolicy) Option {
	return func(c *config) error {
		if policy.kind == 0 || policy.kind == compactFunc && policy.fn == nil {
			return errors.New("robby: WithCompaction: no policy: use DropOldestTurns, SummarizeOldTurns or CompactWith")
		}
		c.compaction = policy
		return nil
	}
}

// WithPinnedFirstMessage makes compaction keep the conversation's first
// user message, such as the statement of a task, in every request.
func WithPinnedFirstMessage() Option {
	return func(c *config) error {
		c.pinFirst = true
		return nil
	}
}

// WithContextWindow sets the model's context window, in tokens. Without it,
// an agent with [WithCompaction] asks the provider (llama.cpp's /props,
// Ollama's /api/show). Else it looks the model up in a table of well-known
// ones. Else it learns the window from the provider's first context-length
// error.
func WithContextWindow(size int) Option {
	return func(c *config) error {
		if size < 16 {
			return fmt.Errorf("robby: WithContextWindow: %d tokens is not a context window", size)
		}
		c.window = size
		return nil
	}
}

// A Compaction is what compaction did to one request. It comes with an
// [EventCompaction].
type Compaction struct {
	Policy string // "drop", "summarize" or "func"
	// Retry is set when a context-length error from the provider caused the
	// compaction. The request is then being sent again.
	Retry bool
	// TurnsDropped and MessagesDropped count what the request no longer sends
	// since this compaction. With the summarize policy, that is what was
	// summed up.
	TurnsDropped, MessagesDropped int
	// MessagesCut counts messages sent shortened, with a note. Each alone was
	// larger than what the budget left.
	MessagesCut int
	// TokensBefore and TokensAfter are the request's tokens before and after,
	// as robby estimates them. Budget is the budget it aimed at.
	TokensBefore, TokensAfter, Budget int
	// Summary is the summary the model wrote, and Usage the tokens its
	// request used (the summarize policy). They are not in the run's
	// Result.Usage, which counts the run's turns.
	Summary string
	Usage   Usage
}

// EstimateTokens estimates the tokens msgs cost a model, as robby counts them
// when it compacts. It counts from their JSON. It is within about 15 % of
// OpenAI's tokenizers for English and code (see docs/CONTEXT.md).
func EstimateTokens(msgs ...openai.ChatCompletionMessageParamUnion) int {
	n := 0
	for _, m := range msgs {
		b, err := m.MarshalJSON()
		if err == nil {
			n += tokens.Count(b)
		}
	}
	return n
}

// A fitting is what fit made of a request: the estimate sent, and what it
// knows of the budget. The error uses these if the request still fails.
type fitting struct {
	budget, window int
	sent           int // estimated tokens of what is sent
	messages       int // messages sent
}

// error is the error of a request that did not fit.
func (f fitting) error(over llmserver.Overflow, err error) error {
	e := &ContextLengthError{Budget: f.budget, Window: over.Window, Tokens: over.Tokens, Estimated: f.sent, err: err}
	if e.Window == 0 {
		e.Window = f.window
	}
	return e
}

// remember keeps what the provider counted of the request just answered.
func (a *Agent) remember(req *request, f fitting, u Usage) {
	a.mu.Lock() // for Clone
	defer a.mu.Unlock()
	l := &a.compact.last
	l.cut, l.at, l.n, l.est, l.prompt = a.compact.cut, a.compact.cutAt, f.messages, f.sent, int(u.PromptTokens)
}

// fit makes req, turn t's request, fit the budget; req holds the agent's
// whole conversation and the turn's pending messages. fit takes out of
// req.history what the policy leaves out. over is the provider's
// context-length error when fit is called again after one.
func (a *Agent) fit(ctx context.Context, t *turn, req *request, over *llmserver.Overflow) (fitting, error) {
	c := a.core
	if c.compaction.kind == 0 {
		return fitting{}, nil
	}
	window := c.contextWindow(ctx)
	if over != nil && over.Window > 0 {
		window = over.Window
	}
	if window == 0 && over == nil {
		return fitting{}, nil // nothing to fit into until the provider says
	}
	list, est := a.historyTokens(len(req.history))
	p := newPlan(req, list, est, c.pinFirst, &a.compact)
	f := fitting{window: window, budget: c.budget(window)}
	scale := 1.0
	if over != nil {
		// What the provider counted, against what robby estimated.
		if over.Tokens > 0 && p.total() > 0 {
			scale = max(1, float64(over.Tokens)/float64(p.total()))
		}
		if window == 0 {
			f.budget = p.total() / 2 // no figure at all: halve the request
		}
	}
	tokensNow := a.calibrated(p, scale)
	if over == nil && tokensNow <= f.budget {
		f.sent, f.messages = p.total(), p.messages()
		p.apply(req)
		return f, nil
	}
	// Compact down to three quarters of the budget, in robby's estimate.
	target := int(float64(f.budget) * 3 / 4 / (float64(tokensNow) / float64(max(1, p.total()))))
	ev := Compaction{Policy: c.compaction.String(), Retry: over != nil, TokensBefore: p.total(), Budget: f.budget}
	var err error
	switch c.compaction.kind {
	case compactDrop:
		p.drop(target, &ev)
	case compactSummarize:
		err = a.summarize(ctx, p, target, &ev)
	case compactFunc:
		err = p.compactWith(ctx, c.compaction.fn, f.budget, &ev)
	}
	if err != nil {
		return fitting{}, err
	}
	ev.MessagesCut = p.cutLarge(target)
	ev.TokensAfter = p.total()
	p.apply(req)
	a.mu.Lock() // for Clone
	a.compact.cut, a.compact.cutAt = p.cut, p.cutAt()
	a.compact.summary, a.compact.sumTok = p.summary, p.sumTok
	a.mu.Unlock()
	f.sent, f.messages = p.total(), p.messages()
	c.log.DebugContext(ctx, "robby: compacted", slog.String("policy", ev.Policy), slog.Int("turns_dropped", ev.TurnsDropped),
		slog.Int("tokens_before", ev.TokensBefore), slog.Int("tokens_after", ev.TokensAfter), slog.Int("budget", ev.Budget))
	emitEvent(t.emit, Event{Kind: EventCompaction, Turn: t.n, Compaction: &ev})
	return f, nil
}

// calibrated is the request's tokens as the provider would count them. When
// the request is the last one and more, that is the last request's count plus
// robby's estimate of what was added since. Otherwise it is robby's estimate,
// scaled as the provider's count of the last request was. A count less than
// half or more than twice robby's estimate is not believed.
func (a *Agent) calibrated(p *plan, scale float64) int {
	l := &a.compact.last
	total := p.total()
	ratio := float64(l.prompt) / float64(max(1, l.est))
	if ratio < 0.5 || ratio > 2 {
		// No count, or one too far from the estimate to be the prompt's (a
		// proxy's, a fake's). Keep the estimate.
		return int(float64(total) * scale)
	}
	if l.cut == p.cut && l.at == p.cutAt() && p.messages() >= l.n {
		return int(float64(l.prompt+total-l.est) * scale)
	}
	return int(float64(total) * ratio * scale)
}

// historyTokens returns the first n messages of the conversation with their
// estimated tokens. Each is counted once in the conversation's life.
func (a *Agent) historyTokens(n int) ([]openai.ChatCompletionMessageParamUnion, []int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	tok := a.conv.tokens(n)
	return a.conv.list[:n:n], tok[:n:n]
}

// summaryPrompt asks the model for the summary; %d is its length in words.
const summaryPrompt = `You compact a conversation between a user and an assistant that uses tools, so that it fits the assistant's memory. ` +
	`Summarise the transcript below for the assistant's own later use: the user's requests and preferences, facts, names, ` +
	`numbers and results found with tools, decisions made, and what is still to do. Write at most %d words, as plain notes, ` +
	`without a preamble.`

// summarize moves the cut as drop does, to leave room for a summary. It has
// the model sum up what the cut leaves out, with the summary before it. If
// the model fails, what is left out is dropped.
func (a *Agent) summarize(ctx context.Context, p *plan, target int, ev *Compaction) error {
	room := min(target/4, 512) // the summary's tokens
	oldSummary := p.summary
	from, to := p.dropTo(target-room+p.sumTok, ev)
	if to == from {
		return nil
	}
	var folded []json.RawMessage
	if oldSummary != nil {
		folded = append(folded, oldSummary)
	}
	for i := from; i < to; i++ {
		if !p.pinned(i) {
			folded = append(folded, p.history[i])
		}
	}
	text := transcript(folded)
	// The summary request must fit too: keep the transcript's end.
	if limit := 4 * max(target-room, 256); len(text) > limit {
		text = "…" + text[len(text)-limit:]
		text = strings.ToValidUTF8(text, "")
	}
	req := &request{history: []json.RawMessage{
		systemJSON(fmt.Sprintf(summaryPrompt, max(20, room*3/4))),
		chatwire.UserJSON(text),
	}}
	r, err := a.complete(ctx, req, nil)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("compaction: %w", context.Cause(ctx))
		}
		if errors.Is(err, ErrBudget) {
			return err // no more calls: the turn's would be refused too
		}
		a.core.log.WarnContext(ctx, "robby: summary request failed, dropping the oldest turns instead", slog.Any("error", err))
		ev.Policy = compactNames[compactDrop]
		return nil
	}
	summary := strings.TrimSpace(r.text.String())
	p.summary = systemJSON(SummaryMarker + summary)
	p.sumTok = tokens.Count(p.summary)
	ev.Summary, ev.Usage = summary, r.usage
	return nil
}
