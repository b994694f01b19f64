package robby

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/robby-go/robby/internal/chatwire"
	"github.com/robby-go/robby/internal/schemas"
)

// Named agents, their team, and the run that goes from one to another as
// they hand the conversation over. The team's root holds the conversation:
// the record of every message, each with the agent that wrote it. Each agent
// runs on its view of it (runHeld), and the record gets what it added.

// HandoffHistory says what of the conversation an agent taking it over gets.
type HandoffHistory int

const (
	// HistoryAll hands over the whole conversation. The default.
	HistoryAll HandoffHistory = iota
	// HistorySummary hands over a summary that the agent handing over
	// writes, as the transfer's "summary" argument.
	HistorySummary
	// HistoryNone hands over nothing but the reason for the handoff.
	HistoryNone
)

// A Handoff lets an agent hand the conversation over to another agent of its
// team ([WithTeam]). The model is offered a tool for it, transfer_to_<name>,
// described by the target's description ([WithDescription]). Its arguments
// are the reason for the handoff, the summary for [HistorySummary], and the
// input, if the handoff has one. The agent taking over gets them in a user
// message that follows what History hands over. Whatever the policy, it never
// gets the transfer's own messages: the assistant message that called
// transfer_to_<name> and the results of its calls.
type Handoff struct {
	// To names the agent that takes over ([WithName]).
	To string
	// History is what of the conversation it gets: [HistoryAll] if not set.
	History HandoffHistory
	// Input, if not nil, is a value of the type the model fills in as the
	// transfer's "input" argument, such as Escalation{}. Its JSON Schema is
	// inferred as [NewTool]'s In is. The agent taking over reads it as JSON.
	Input any
}

// A Transfer is a handoff that happened. The [Event] of kind [EventHandoff]
// carries it, and [Result.Handoffs] lists them.
type Transfer struct {
	From, To string // the agents' names
	Reason   string // as the model gave it
}

// errTeamRun refuses the runs a team's root does not make.
var errTeamRun = errors.New("robby: a team's root (WithTeam) makes no typed run")

// transferPrefix begins the name of a handoff's tool.
const transferPrefix = "transfer_to_"

// WithName names the agent. A team's agents are known by their names
// ([WithTeam]), which their handoffs' tools carry: transfer_to_<name>. So a
// name matches ^[a-zA-Z0-9_-]{1,52}$.
func WithName(name string) Option {
	return func(c *config) error {
		if !validName(transferPrefix + name) {
			return fmt.Errorf("robby: WithName: %q must match ^[a-zA-Z0-9_-]{1,52}$", name)
		}
		c.name = name
		return nil
	}
}

// WithDescription says what the agent does, for the model of an agent that
// may hand the conversation over to it ([Handoff]).
func WithDescription(text string) Option {
	return func(c *config) error {
		c.description = text
		return nil
	}
}

// WithHandoffs lets the agent hand the conversation over to other agents of
// its team ([WithTeam]). The target takes over the same run, with its own
// system prompt, model, tools and limits. The run's turns and spending count
// across the agents: each agent's [WithMaxTurns] and [WithBudget] bound the
// whole run so far. So a loop of handoffs ends at a turn limit as any run
// does. An agent run alone, out of its team, offers no handoffs.
func WithHandoffs(handoffs ...Handoff) Option {
	return func(c *config) error {
		c.handoffs = append(c.handoffs, handoffs...)
		return nil
	}
}

// WithReturnToRoot makes the conversation go back to the team's root once the agent answers.
// By default the agent that answered keeps it: the next run starts with it.
func WithReturnToRoot() Option {
	return func(c *config) error {
		c.returnToRoot = true
		return nil
	}
}

// WithTeam makes the agent the root of a team of agents, each built by [New]
// with [WithName], that hand the conversation over to one another
// ([WithHandoffs]). The root needs a name too. Its runs start with the agent
// that holds the conversation: the root at first, then the one that answered
// last, unless it returns to the root ([WithReturnToRoot]). A run bound to a
// stored conversation ([WithConversation]) finds it there: each message is
// stored with the agent that wrote it ([Message.Agent]). The root's
// conversation is the whole record; the others' views of it are made for
// each run. The root's Close does not close its team's agents.
//
// New fails when a handoff names no agent of the team, or when two agents
// have one name. A team's agent may not have a team of its own. Typed runs
// ([RunTyped]) are not for a team's root. Its [WithOneTurn] run takes one
// turn of the agent that holds the conversation and, when that turn hands
// it over, one of each agent taking it over, as a run of a durable workflow
// carries a team on.
func WithTeam(agents ...*Agent) Option {
	return func(c *config) error {
		c.team = append(c.team, agents...)
		return nil
	}
}

// Name returns the agent's name ([WithName]), empty if it has none.
func (a *Agent) Name() string { return a.core.name }

// A team is what a root agent knows of its team: each agent's core, and the
// tools of each agent's handoffs.
type team struct {
	agents map[string]*core                            // by name, the root's included
	defs   map[string][]openai.FunctionDefinitionParam // offered as caller-run tools
	sets   map[string]*toolset                         // run with the agent's approval and middleware
}

// newTeam checks the team of root, given as cfg says, and makes its tools.
func newTeam(root *core, cfg *config) (*team, error) {
	if cfg.name == "" {
		return nil, errors.New("robby: WithTeam: the root agent has no name (WithName)")
	}
	tm := &team{agents: map[string]*core{cfg.name: root}, defs: map[string][]openai.FunctionDefinitionParam{}, sets: map[string]*toolset{}}
	for i, m := range cfg.team {
		switch {
		case m == nil:
			return nil, fmt.Errorf("robby: WithTeam: agent %d is nil", i+1)
		case m.core.name == "":
			return nil, fmt.Errorf("robby: WithTeam: agent %d has no name (WithName)", i+1)
		case tm.agents[m.core.name] != nil:
			return nil, fmt.Errorf("robby: WithTeam: two agents are named %q", m.core.name)
		case m.core.team != nil:
			return nil, fmt.Errorf("robby: WithTeam: agent %q has a team of its own", m.core.name)
		}
		tm.agents[m.core.name] = m.core
	}
	for name, c := range tm.agents {
		if err := tm.addTools(name, c); err != nil {
			return nil, err
		}
	}
	return tm, nil
}

// addTools makes the tools of c's handoffs.
func (tm *team) addTools(name string, c *core) error {
	tools := make([]Tool, 0, len(c.handoffs))
	for _, h := range c.handoffs {
		to := tm.agents[h.To]
		switch {
		case to == nil:
			return fmt.Errorf("robby: agent %q: handoff to %q, which is not an agent of the team", name, h.To)
		case h.To == name:
			return fmt.Errorf("robby: agent %q: handoff to itself", name)
		case h.History < HistoryAll || h.History > HistoryNone:
			return fmt.Errorf("robby: agent %q: handoff to %q: unknown history policy %d", name, h.To, h.History)
		}
		t, def, err := transferTool(h, to)
		if err != nil {
			return fmt.Errorf("agent %q: handoff to %q: %w", name, h.To, err)
		}
		tools, tm.defs[name] = append(tools, t), append(tm.defs[name], def)
	}
	ts, err := newToolset(tools, c.tools.policy)
	if err != nil {
		return fmt.Errorf("agent %q: %w", name, err)
	}
	for _, own := range c.tools.get(context.Background()).names {
		if strings.HasPrefix(own, transferPrefix) {
			return fmt.Errorf("robby: agent %q: tool %q: names beginning with %q are the handoffs'", name, own, transferPrefix)
		}
	}
	tm.sets[name] = ts
	return nil
}

// transferTool returns the tool of handoff h to agent to, and its definition.
func transferTool(h Handoff, to *core) (Tool, openai.FunctionDefinitionParam, error) {
	props := map[string]any{"reason": map[string]any{"type": "string",
		"description": "why " + to.name + " takes over, with what it needs to know"}}
	required := []any{"reason"}
	if h.History == HistorySummary {
		props["summary"] = map[string]any{"type": "string", "description": "a short summary of the conversation so far"}
		required = append(required, "summary")
	}
	if h.Input != nil {
		s := schemas.ArgsOf(reflect.TypeOf(h.Input))
		if s.Err != nil {
			return Tool{}, openai.FunctionDefinitionParam{}, fmt.Errorf("input: %w", s.Err)
		}
		props["input"] = map[string]any(s.Params)
		required = append(required, "input")
	}
	params := map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
	name, desc := transferPrefix+to.name, "Hand the conversation over to "+to.name
	if to.description != "" {
		desc += ": " + to.description
	}
	done := "Transferred to " + to.name + "."
	t := FuncTool(name, desc, params, func(context.Context, map[string]any) (any, error) { return done, nil })
	def := openai.FunctionDefinitionParam{Name: name, Description: openai.String(desc), Parameters: shared.FunctionParameters(params)}
	return t, def, t.err
}

// runTeam is run for the root of a team. It runs the agent that holds the
// conversation, then each agent it hands over to, until one answers or the
// run ends otherwise. One meter counts the run's spending: each agent's
// budget bounds the run so far.
func (a *Agent) runTeam(ctx context.Context, prompt messages, rc *runConfig, emit func(Event) bool) (*Result, error) {
	res := new(Result)
	if err := rc.journal.open(ctx, a, prompt); err != nil {
		return res, err
	}
	tr := &teamRun{root: a, rc: *rc, spent: &meter{parent: meterOf(ctx), used: rc.spent()}, res: res}
	if emit != nil {
		tr.emit = func(e Event) bool { e.Agent = res.Agent; return emit(e) }
	}
	ctx = context.WithValue(ctx, meterKey{}, tr.spent)
	for c := a.activeCore(); ; {
		tr.rc.before, res.Agent = res.Turns, c.name
		tr.rc.caller = append(slices.Clip(rc.caller), a.core.team.defs[c.name]...)
		r, err := tr.runAs(ctx, c, prompt)
		res.merge(r)
		for range r.Messages {
			res.Agents = append(res.Agents, c.name)
		}
		res.Pending = r.Pending
		if err != nil {
			return res, err
		}
		prompt, tr.rc.results = messages{}, nil
		if !slices.ContainsFunc(r.Pending, isTransfer) {
			return res, nil
		}
		res.Pending = nil
		next, results, err := tr.handOff(ctx, c, r.Pending)
		if err != nil {
			return res, err
		}
		c, tr.rc.results = next, results
	}
}

// A teamRun is a run of a team's root under way.
type teamRun struct {
	root  *Agent
	rc    runConfig // of the agent's run under way
	emit  func(Event) bool
	spent *meter // counts the whole run
	res   *Result
}

// runAs runs agent c on its view of the conversation, then adds what the run
// added to the record, each message marked as c's.
func (tr *teamRun) runAs(ctx context.Context, c *core, prompt messages) (*Result, error) {
	a, rc := tr.root, &tr.rc
	v, n := a.view(c)
	ctx = c.metered(ctx, tr.spent.spent())
	ctx, op := c.tel.startRun(ctx, v.model(rc), &toolIdentity{c.name, c.description})
	res, err := v.runHeld(ctx, prompt, rc, tr.emit)
	op.end(ctx, res, err)
	v.mu.Lock()
	defer v.mu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tags = append(a.tags, make([]string, len(a.conv.list)-len(a.tags))...)
	for i := n; i < len(v.conv.list); i++ {
		a.conv.add(v.conv.list[i], rawAt(v.conv, i))
		a.tags = append(a.tags, c.name)
	}
	a.usage, a.unsaved = v.usage, v.unsaved
	rc.journal.moveTo(a)
	return res, err
}

// handOff answers the calls the turn of agent from paused on, a transfer
// among them. It returns the agent that goes on. That is the transfer's
// target, once the handoff is stored: the calls' results, then the note the
// target reads, in one write. Or it is from, with the results to give it,
// when the transfer failed: its arguments, or an approval, refused it.
func (tr *teamRun) handOff(ctx context.Context, from *core, pending []ToolCall) (*core, []ToolResult, error) {
	a, res := tr.root, tr.res
	tm := a.core.team
	results := make([]ToolResult, len(pending))
	first := slices.IndexFunc(pending, isTransfer)
	for i, c := range pending {
		results[i].Call = c
		if i != first {
			results[i].finish(errors.New("not run: this turn hands the conversation over, and only its first transfer"), 0, nil, 0)
		}
	}
	tm.sets[from.name].execute(ctx, pending[first:first+1], results[first:first+1], nil)
	for i := range results { // the run held the calls as a caller's: they ran here, and are reported here
		emitEvent(tr.emit, Event{Kind: EventToolCall, Turn: res.Turns, ToolCall: &pending[i]})
		emitEvent(tr.emit, Event{Kind: EventToolResult, Turn: res.Turns, ToolCall: &results[i].Call, ToolResult: &results[i]})
	}
	to := tm.agents[strings.TrimPrefix(pending[first].Name, transferPrefix)]
	if results[first].Err != nil || to == nil {
		return from, results, nil
	}
	var args struct {
		Reason, Summary string
		Input           json.RawMessage
	}
	if err := json.Unmarshal([]byte(pending[first].Arguments), &args); err != nil {
		return nil, nil, fmt.Errorf("handoff to %q: %w", to.name, err) // validated: not reached
	}
	var ms messages
	agents := make([]string, 0, len(results)+1)
	for _, r := range results {
		ms.add(toolMessage(r))
		agents = append(agents, from.name)
	}
	note := "Agent " + from.name + " handed the conversation over to you. Reason: " + args.Reason
	if args.Summary != "" {
		note += "\nSummary of the conversation so far: " + args.Summary
	}
	if len(args.Input) > 0 {
		note += "\nInput: " + string(args.Input)
	}
	ms.add(openai.UserMessage(note), chatwire.UserJSON(note))
	if err := tr.rc.journal.saveAs(ctx, ms, append(agents, to.name)); err != nil {
		return nil, nil, err
	}
	a.mu.Lock()
	a.conv.addAll(ms)
	a.tags = append(a.tags, append(agents, to.name)...)
	a.mu.Unlock()
	res.Messages = append(res.Messages, ms.list...)
	res.Agents = append(res.Agents, append(agents, to.name)...)
	t := Transfer{From: from.name, To: to.name, Reason: args.Reason}
	res.Handoffs = append(res.Handoffs, t)
	emitEvent(tr.emit, Event{Kind: EventHandoff, Turn: res.Turns, Transfer: &t})
	return to, nil, nil
}

func isTransfer(c ToolCall) bool { return strings.HasPrefix(c.Name, transferPrefix) }

// view returns an agent of c over c's view of the conversation, and the
// view's length. The view is c's leading messages (its system prompt), then
// the record from where c's view starts (viewFrom), without the record's
// leading system messages, nor the messages of the handoffs that happened.
func (a *Agent) view(c *core) (*Agent, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	conv := c.initial.clone()
	list := a.conv.list
	i := a.viewFrom(c)
	for i < len(list) && (list[i].OfSystem != nil || list[i].OfDeveloper != nil) {
		i++
	}
	for ; i < len(list); i++ {
		if end := a.handoffAt(i); end > i {
			i = end - 1 // the transfer's call and results
			continue
		}
		conv.add(list[i], rawAt(a.conv, i))
	}
	v := &Agent{core: c, busy: make(chan struct{}, 1), conv: conv, usage: a.usage, unsaved: a.unsaved}
	return v, len(conv.list)
}

// viewFrom returns where c's view of the record starts: at the note c got
// from the handoff that gave it the conversation, if its policy hands over
// less than [HistoryAll]. Else it starts at the beginning.
func (a *Agent) viewFrom(c *core) int {
	k := len(a.tags) - 1
	for k >= 0 && (a.tags[k] == "" || a.tags[k] == c.name) {
		k--
	}
	s := k + 1
	if k < 0 || s == len(a.tags) || a.tags[s] != c.name || a.conv.list[k].OfTool == nil || a.conv.list[s].OfUser == nil {
		return 0 // the agent did not get the conversation by a handoff
	}
	from := a.core.team.agents[a.tags[k]]
	if from == nil {
		return 0
	}
	for _, h := range from.handoffs {
		if h.To == c.name && h.History != HistoryAll {
			return s
		}
	}
	return 0
}

// handoffAt returns where the messages of a handoff that happened at i end:
// an assistant message calling a transfer, and its calls' results, followed
// by the note of another agent. It returns i when no handoff is there.
func (a *Agent) handoffAt(i int) int {
	list := a.conv.list
	m := list[i].OfAssistant
	if m == nil || !slices.ContainsFunc(m.ToolCalls, func(tc openai.ChatCompletionMessageToolCallUnionParam) bool {
		return tc.OfFunction != nil && strings.HasPrefix(tc.OfFunction.Function.Name, transferPrefix)
	}) {
		return i
	}
	end := i + 1
	for end < len(list) && list[end].OfTool != nil {
		end++
	}
	if end == len(list) || list[end].OfUser == nil || end >= len(a.tags) || a.tags[end] == "" || a.tags[end] == a.tags[i] {
		return i // a transfer that failed, or awaits its result
	}
	return end
}
