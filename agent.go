package robby

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
	conv messages // append-only between resets

	compact compactState // used by the operation holding busy
}

// core is what an agent and its clones share; nothing in it changes after
// New but the closed state.
type core struct {
	client    openai.Client
	reqOpts   []option.RequestOption
	params    openai.ChatCompletionNewParams // Messages and Tools left empty
	heads     [2]func() ([]byte, error)      // params encoded, plain and streamed
	initial   messages                       // the system prompt and the messages of WithParams
	maxTurns  int
	finalTurn bool
	log       *slog.Logger
	secrets   secrets // kept out of errors
	tools     toolbox

	window     int          // given by WithContextWindow
	learned    atomic.Int64 // the window the provider reported
	discovery  sync.Once
	compaction CompactionPolicy
	pinFirst   bool

	closeOnce sync.Once
	closed    chan struct{}
}

// defaultHTTPClient is shared by the agents built without [WithClient], so
// that agents created one after another reuse connections. As openai-go does
// for its own default, it bounds the wait for response headers, not the
// stream that follows. It keeps up to maxIdleConns idle connections, not
// Go's default of 2 a host, so that conversations in flight together find
// theirs again turn after turn instead of opening new ones.
var defaultHTTPClient = sync.OnceValue(func() *http.Client {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return &http.Client{Transport: http.DefaultTransport}
	}
	t = t.Clone()
	t.ResponseHeaderTimeout = 10 * time.Minute
	t.MaxIdleConns, t.MaxIdleConnsPerHost = maxIdleConns, maxIdleConns
	return &http.Client{Transport: t}
})

// maxIdleConns bounds the idle connections of the default transport; each
// costs some 10 KB and closes after 90 s unused.
const maxIdleConns = 1024

// sharedClient is the openai-go client of the agents built without
// [WithClient], kept with the environment it was built from.
// openai.NewClient builds a service for every OpenAI API, hundreds of
// allocations, for agents that only post chat completions (and set their
// base URL and key per request): agents share one, built again when the
// OPENAI_* variables it reads change.
var sharedClient atomic.Pointer[envClient]

type envClient struct {
	env    string
	client openai.Client
}

// openaiEnv are the variables openai.NewClient reads (see
// openai.DefaultClientOptions).
var openaiEnv = [...]string{"OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "OPENAI_ORG_ID",
	"OPENAI_PROJECT_ID", "OPENAI_WEBHOOK_SECRET", "OPENAI_CUSTOM_HEADERS"}

func defaultClient() openai.Client {
	var env strings.Builder
	for _, k := range openaiEnv {
		if v, ok := os.LookupEnv(k); ok {
			env.WriteByte(1)
			env.WriteString(v)
		}
		env.WriteByte(0) // no variable holds it
	}
	if c := sharedClient.Load(); c != nil && c.env == env.String() {
		return c.client
	}
	c := &envClient{env: env.String(), client: openai.NewClient(option.WithHTTPClient(defaultHTTPClient()))}
	sharedClient.Store(c)
	return c.client
}

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
		reqOpts:    requestOptions(&cfg),
		params:     cfg.params,
		maxTurns:   cfg.maxTurns,
		finalTurn:  cfg.finalTurn,
		log:        cfg.logger,
		secrets:    secretsOf(&cfg),
		window:     cfg.window,
		compaction: cfg.compaction,
		pinFirst:   cfg.pinFirst,
		closed:     make(chan struct{}),
	}
	if cfg.client != nil {
		c.client = *cfg.client
	} else {
		c.client = defaultClient()
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
		c.heads[i] = sync.OnceValues(func() ([]byte, error) { return encodeHead(&c.params, stream) })
	}
	if err := c.tools.init(&cfg); err != nil {
		return nil, fmt.Errorf("robby: %w", err)
	}
	a := newAgent(c, c.initial)
	a.owner = true
	return a, nil
}

func newAgent(c *core, conv messages) *Agent {
	return &Agent{core: c, busy: make(chan struct{}, 1), conv: conv.clone()}
}

// head returns the agent's parameters encoded for a request.
func (c *core) head(stream bool) ([]byte, error) {
	if stream {
		return c.heads[1]()
	}
	return c.heads[0]()
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
	// Requests go out through Client.Post, which would fall back on an
	// admin key (OPENAI_ADMIN_KEY) when no API key is set; chat
	// completions never take one.
	return append(opts, option.WithAdminAPIKey(""), option.WithMiddleware(captureErrors))
}

// Clone returns an agent that shares a's client, configuration and tools
// but has a conversation of its own, starting as a copy of a's. Clones are
// cheap: use one per independent conversation, such as one per request of
// a server. Closing the agent that [New] returned closes its clones too;
// closing a clone does nothing. A clone sends what a would of their shared
// messages: what compaction left out or summed up stays so.
func (a *Agent) Clone() *Agent {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := newAgent(a.core, a.conv)
	c.compact = a.compact
	return c
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
	a.conv = messages{list: slices.Clone(msgs)}
}

// Reset brings the conversation back to how [New] began it: the system
// prompt and the messages of [WithParams].
func (a *Agent) Reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.conv = a.core.initial.clone()
}

// awaiting returns the calls of the conversation that await a result.
func (a *Agent) awaiting() []ToolCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return awaiting(a.conv.list)
}

// encodedHistory returns the conversation encoded, and how many system
// (or developer) messages open it. The slice shares no writable memory with
// the agent's.
func (a *Agent) encodedHistory() (raw []json.RawMessage, lead int, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for lead < len(a.conv.list) && (a.conv.list[lead].OfSystem != nil || a.conv.list[lead].OfDeveloper != nil) {
		lead++
	}
	raw, err = a.conv.encoded()
	return raw, lead, err
}
