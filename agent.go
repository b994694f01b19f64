package robby

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/robby-go/robby/internal/chatwire"

	"github.com/openai/openai-go/v3"
)

// ErrClosed is returned by the methods of an [Agent] after [Agent.Close].
var ErrClosed = errors.New("robby: agent is closed")

// An Agent is an LLM with tools and a conversation. Build one with [New].
//
// An Agent is safe for concurrent use. Its conversation is shared by every
// caller. Operations that talk to the model (Run, Stream and the building
// blocks) take turns on it. Each waits for the one before to end or for its
// own context to be done. The memory methods never wait; they see and change
// the conversation between turns. To hold many independent conversations over
// the same configuration and tools, use [Agent.Clone].
type Agent struct {
	core  *core
	owner bool          // made by New: its Close closes the core
	busy  chan struct{} // holds a token while an operation uses the conversation

	mu    sync.Mutex
	conv  messages // append-only between resets
	usage Usage    // of the model calls on conv since New, Clone or Reset
	// unsaved is the part of usage not yet stored with a message. The message
	// is one of the conversation a run is bound to (WithConversation).
	unsaved Usage

	compact compactState // used by the operation holding busy
	// tags name the agent of a team that wrote each message of conv, ""
	// for none. It may be shorter than conv: the rest have none.
	tags []string
}

// New builds an agent from its options. A model is required ([WithModel]);
// an invalid option or tool is reported as an error.
func New(opts ...Option) (*Agent, error) {
	cfg := defaultConfig()
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("robby: option %d of %d is nil", i+1, len(opts))
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.model != "" {
		cfg.params.Model = cfg.model
	}
	if cfg.params.Model == "" {
		return nil, errors.New("robby: no model: use WithModel")
	}
	if err := errors.Join(checkPrices(&cfg), checkBudget(&cfg)); err != nil {
		return nil, err
	}
	cfg.secrets = secretsOf(&cfg)
	cfg.logger = cfg.secrets.logger(cfg.logger)
	tel, err := newTelemetry(&cfg)
	if err != nil {
		return nil, err
	}
	cfg.telemetry = tel
	c := &core{
		reqOpts:    requestOptions(&cfg),
		params:     cfg.params,
		maxTurns:   cfg.maxTurns,
		finalTurn:  cfg.finalTurn,
		log:        cfg.logger,
		secrets:    cfg.secrets,
		tel:        tel,
		modelMW:    slices.Clone(cfg.modelMW),
		prices:     cfg.prices,
		runBudget:  cfg.budget,
		window:     cfg.window,
		compaction: cfg.compaction,
		pinFirst:   cfg.pinFirst,
		closed:     make(chan struct{}),

		name: cfg.name, description: cfg.description, handoffs: cfg.handoffs, returnToRoot: cfg.returnToRoot,
	}
	c.fallbacks = endpoints(&cfg, c.reqOpts)
	if cfg.client != nil {
		c.client = *cfg.client
	} else {
		c.client = defaultClient()
	}
	if c.guards = cfg.guards; c.guards != nil {
		c.guards.core = c
	}
	if cfg.system != "" {
		c.initial.add(openai.SystemMessage(cfg.system), nil)
	}
	c.initial.list = append(c.initial.list, cfg.params.Messages...)
	c.params.Messages, c.params.Tools = nil, nil
	if _, err := c.initial.encoded(); err != nil {
		return nil, err
	}
	for i, stream := range [...]bool{false, true} {
		c.heads[i] = sync.OnceValues(func() ([]byte, error) { return chatwire.EncodeHead(&c.params, stream) })
	}
	if err := c.tools.init(&cfg); err != nil {
		return nil, err
	}
	if len(cfg.team) > 0 {
		if c.team, err = newTeam(c, &cfg); err != nil {
			c.tools.close()
			return nil, err
		}
	}
	a := newAgent(c, c.initial)
	a.owner = true
	return a, nil
}

func newAgent(c *core, conv messages) *Agent {
	return &Agent{core: c, busy: make(chan struct{}, 1), conv: conv.clone()}
}

// Clone returns an agent that shares a's client, configuration and tools. It
// has a conversation of its own, starting as a copy of a's. Clones are cheap:
// use one per independent conversation, such as one per request of a server.
// Closing the agent that [New] returned closes its clones too; closing a
// clone does nothing. A clone sends what a would of their shared messages.
// What compaction left out or summed up stays so.
func (a *Agent) Clone() *Agent {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := newAgent(a.core, a.conv)
	c.compact, c.tags = a.compact, slices.Clone(a.tags)
	return c
}

// TeamAgent returns the agent named name of the team a leads ([WithTeam]),
// with the conversation [New] began it with. It shares the agent's
// configuration and tools, as a clone does: its tools run with its approval
// and middleware. It returns nil when a's team has no agent of that name.
// A durable run of a team runs the calls of the agent that made them on it.
func (a *Agent) TeamAgent(name string) *Agent {
	if a.core.team == nil || a.core.team.agents[name] == nil {
		return nil
	}
	c := a.core.team.agents[name]
	return newAgent(c, c.initial)
}

// Close releases what the agent holds: it ends its MCP sessions and their
// subprocesses. Each ends within its server's grace period
// ([DefaultMCPGracePeriod], 1 s). The MCP calls in flight may finish until
// then. After that they end with an error wrapping [ErrClosed], and a command
// server still running is terminated. No MCP server is started again once
// Close began. Later operations return [ErrClosed], and a run under way
// returns it before its next turn. Close is idempotent.
func (a *Agent) Close() error {
	if !a.owner {
		return nil
	}
	var err error
	a.core.closeOnce.Do(func() {
		close(a.core.closed)
		err = a.core.tools.close()
	})
	return err
}

// Tools returns the agent's tools now, local and MCP, sorted by name. MCP
// servers may change theirs during the agent's life. Deferred tools
// ([Tool.IsDeferred]) are listed, and with them [SearchToolsName], which
// finds them for the model.
func (a *Agent) Tools() []Tool {
	ts := a.core.tools.get(context.Background())
	tools := make([]Tool, 0, len(ts.names))
	for _, name := range ts.names {
		tools = append(tools, *ts.byName[name])
	}
	return tools
}

// acquire waits until no other operation uses the conversation.
func (a *Agent) acquire(ctx context.Context) (release func(), err error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	if a.core.isClosed() {
		return nil, ErrClosed
	}
	select {
	case a.busy <- struct{}{}:
		return func() { <-a.busy }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the conversation: %w", context.Cause(ctx))
	case <-a.core.closed:
		return nil, ErrClosed
	}
}

// Limits are the bounds an agent's runs keep, as its options set them.
type Limits struct {
	MaxTurns            int           // WithMaxTurns
	FinalAnswer         bool          // WithFinalAnswer
	MaxToolCallsPerTurn int           // WithMaxToolCallsPerTurn
	ToolTimeout         time.Duration // WithToolTimeout
	Budget              Budget        // WithBudget
}

// Limits returns the bounds of the agent's runs. A caller that carries a run
// on in steps of its own ([WithOneTurn]) must keep them too.
func (a *Agent) Limits() Limits {
	p := a.core.tools.policy
	return Limits{MaxTurns: a.core.maxTurns, FinalAnswer: a.core.finalTurn,
		MaxToolCallsPerTurn: p.limit, ToolTimeout: p.timeout, Budget: a.core.runBudget}
}
