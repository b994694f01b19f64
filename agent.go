package robby

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// ErrClosed is returned by the methods of an [Agent] after [Agent.Close].
var ErrClosed = errors.New("robby: agent is closed")

// An Agent is an LLM with tools and a conversation. Build one with [New].
//
// An Agent is safe for concurrent use. Its conversation is shared by every
// caller: operations that talk to the model (Run, Stream and the building
// blocks) take turns on it, each waiting for the one before to end or for
// its own context to be done. The memory methods never wait; they see and
// change the conversation between turns. To hold many independent
// conversations over the same configuration and tools, use [Agent.Clone].
type Agent struct {
	core  *core
	owner bool          // made by New: its Close closes the core
	busy  chan struct{} // holds a token while an operation uses the conversation

	mu   sync.Mutex
	msgs []openai.ChatCompletionMessageParamUnion // append-only between resets
}

// core is what an agent and its clones share; nothing in it changes after
// New but the closed state.
type core struct {
	client    openai.Client
	reqOpts   []option.RequestOption
	params    openai.ChatCompletionNewParams // Messages and Tools left empty
	initial   []openai.ChatCompletionMessageParamUnion
	maxTurns  int
	finalTurn bool
	log       *slog.Logger
	secrets   secrets // kept out of errors
	tools     toolbox

	closeOnce sync.Once
	closed    chan struct{}
}

// defaultHTTPClient is shared by the agents built without [WithClient], so
// that agents created one after another reuse connections. As openai-go does
// for its own default, it bounds the wait for response headers, not the
// stream that follows.
var defaultHTTPClient = sync.OnceValue(func() *http.Client {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return &http.Client{Transport: http.DefaultTransport}
	}
	t = t.Clone()
	t.ResponseHeaderTimeout = 10 * time.Minute
	return &http.Client{Transport: t}
})

// New builds an agent from its options. A model is required ([WithModel]);
// an invalid option or tool is reported as an error.
func New(opts ...Option) (*Agent, error) {
	cfg := defaultConfig()
	for _, opt := range opts {
		if err := opt(&cfg); err != nil {
			return nil, fmt.Errorf("robby: %w", err)
		}
	}
	if cfg.model != "" {
		cfg.params.Model = cfg.model
	}
	if cfg.params.Model == "" {
		return nil, errors.New("robby: no model: use WithModel")
	}
	c := &core{
		reqOpts:   requestOptions(&cfg),
		params:    cfg.params,
		maxTurns:  cfg.maxTurns,
		finalTurn: cfg.finalTurn,
		log:       cfg.logger,
		secrets:   secretsOf(&cfg),
		closed:    make(chan struct{}),
	}
	if cfg.client != nil {
		c.client = *cfg.client
	} else {
		c.client = openai.NewClient(option.WithHTTPClient(defaultHTTPClient()))
	}
	if cfg.system != "" {
		c.initial = append(c.initial, openai.SystemMessage(cfg.system))
	}
	c.initial = append(c.initial, cfg.params.Messages...)
	c.params.Messages, c.params.Tools = nil, nil
	if err := c.tools.init(&cfg); err != nil {
		return nil, fmt.Errorf("robby: %w", err)
	}
	a := newAgent(c, c.initial)
	a.owner = true
	return a, nil
}

func newAgent(c *core, msgs []openai.ChatCompletionMessageParamUnion) *Agent {
	return &Agent{core: c, busy: make(chan struct{}, 1), msgs: slices.Clone(msgs)}
}

func requestOptions(cfg *config) []option.RequestOption {
	var opts []option.RequestOption
	if cfg.baseURL != nil {
		opts = append(opts, option.WithBaseURL(*cfg.baseURL))
	}
	if cfg.apiKey != nil {
		opts = append(opts, option.WithAPIKey(*cfg.apiKey))
	}
	opts = append(opts, cfg.requestOptions...)
	return append(opts, option.WithMiddleware(captureErrors))
}

// Clone returns an agent that shares a's client, configuration and tools
// but has a conversation of its own, starting as a copy of a's. Clones are
// cheap: use one per independent conversation, such as one per request of
// a server. Closing the agent that [New] returned closes its clones too;
// closing a clone does nothing.
func (a *Agent) Clone() *Agent {
	return newAgent(a.core, a.Messages())
}

// Close releases what the agent holds: it ends its MCP sessions and their
// subprocesses. Later operations return [ErrClosed]. Close is idempotent.
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

// Tools returns the tools the agent offers the model now, local and MCP,
// sorted by name. MCP servers may change theirs during the agent's life.
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
	select {
	case <-a.core.closed:
		return nil, ErrClosed
	default:
	}
	select {
	case a.busy <- struct{}{}:
		return func() { <-a.busy }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("robby: waiting for the conversation: %w", context.Cause(ctx))
	case <-a.core.closed:
		return nil, ErrClosed
	}
}

// Messages returns a copy of the conversation, the system prompt first.
func (a *Agent) Messages() []openai.ChatCompletionMessageParamUnion {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.msgs)
}

// AddMessages appends messages to the conversation, such as
// openai.UserMessage before [Agent.ChatCompletion].
func (a *Agent) AddMessages(msgs ...openai.ChatCompletionMessageParamUnion) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.msgs = append(a.msgs, msgs...)
}

// SetMessages replaces the whole conversation, system prompt included.
func (a *Agent) SetMessages(msgs []openai.ChatCompletionMessageParamUnion) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.msgs = slices.Clone(msgs)
}

// Reset brings the conversation back to how [New] began it: the system
// prompt and the messages of [WithParams].
func (a *Agent) Reset() {
	a.SetMessages(a.core.initial)
}

// history returns the conversation followed by pending messages, for a
// request. The slice shares no writable memory with the agent's.
func (a *Agent) history(pending []openai.ChatCompletionMessageParamUnion) []openai.ChatCompletionMessageParamUnion {
	a.mu.Lock()
	msgs := a.msgs[:len(a.msgs):len(a.msgs)]
	a.mu.Unlock()
	if len(pending) == 0 {
		return msgs
	}
	return append(msgs, pending...)
}
