// Package a2atool makes an agent that another process serves over A2A (the
// Agent2Agent protocol, 1.0) a tool of a robby agent, through the protocol's
// official Go SDK (github.com/a2aproject/a2a-go/v2).
//
// [New] reads the remote agent's card, whose name and description the tool
// takes. Each call sends the prompt the model wrote to the agent as a
// message, which starts a task there, and waits for the task to end. The
// text of the task's artifacts is the tool's result. An agent that answers
// with a message gives that message's text. A task that fails, is rejected
// or canceled, or asks for input or authentication that a tool call cannot
// give, is an error the model reads. So are the network's errors and the
// call's timeout. A call that ends before its task does cancels the task.
// In a streamed run, each status update of the task that says something
// comes as an [robby.EventProgress] event ([robby.Notify]). The text of its
// artifacts comes as it is sent, as the text of an agent the call runs: an
// [robby.EventAgent] event wrapping an [robby.EventText] ([robby.NotifyAgent]),
// as a local agent used as a tool streams.
//
// Headers ([WithHeader]) go with every request, the card's included. Their
// values never appear in the errors.
package a2atool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/robby-go/robby"
)

// DefaultTimeout bounds each call of a remote agent, unless [WithTimeout]
// says otherwise: a remote agent that never ends its task must not hold
// the run forever.
const DefaultTimeout = 5 * time.Minute

// An Option configures a remote agent's tool.
type Option func(*config)

type config struct {
	header            http.Header
	client            *http.Client
	name, description string
	timeout           time.Duration
}

// WithHeader adds a header to every request to the agent, its card's
// included: an Authorization header, say.
func WithHeader(name, value string) Option {
	return func(c *config) { c.header.Add(name, value) }
}

// WithHTTPClient sets the client of the requests. Its Timeout, if any,
// bounds a whole streamed call: prefer [WithTimeout].
func WithHTTPClient(client *http.Client) Option {
	return func(c *config) { c.client = client }
}

// WithName names the tool, rather than the card's name made a tool's name.
func WithName(name string) Option {
	return func(c *config) { c.name = name }
}

// WithDescription describes the tool, rather than the card's description.
func WithDescription(description string) Option {
	return func(c *config) { c.description = description }
}

// WithTimeout bounds each call ([DefaultTimeout]).
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout = d }
}

// New reads the card of the agent served at url (its
// /.well-known/agent-card.json) and returns the tool that calls it. The
// tool is safe for concurrent use: each call is a task of its own.
func New(ctx context.Context, url string, opts ...Option) (robby.Tool, error) {
	cfg := config{header: http.Header{}, client: http.DefaultClient, timeout: DefaultTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	hc := withHeader(cfg.client, cfg.header)
	card, err := agentcard.NewResolver(hc).Resolve(ctx, url)
	if err != nil {
		return robby.Tool{}, fmt.Errorf("a2atool: reading the agent card at %s: %w", url, err)
	}
	client, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(hc), a2aclient.WithRESTTransport(hc))
	if err != nil {
		return robby.Tool{}, fmt.Errorf("a2atool: agent %q at %s: %w", card.Name, url, err)
	}
	name, desc := cfg.name, cfg.description
	if name == "" {
		name = toolName(card.Name)
	}
	if desc == "" {
		desc = card.Description
	}
	r := &remote{client: client, name: card.Name, timeout: cfg.timeout}
	return robby.NewTool(name, desc, r.call), nil
}

// notName is what a tool's name may not hold.
var notName = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// toolName makes an agent's name a tool's: "Pricing Agent" is
// "pricing_agent".
func toolName(agent string) string {
	name := strings.Trim(notName.ReplaceAllString(strings.ToLower(agent), "_"), "_")
	if name == "" {
		name = "remote_agent"
	}
	return name[:min(len(name), 64)]
}

// A prompt is the input of a remote agent's tool.
type prompt struct {
	Prompt string `json:"prompt" jsonschema:"the task for the agent, with everything it needs to know"`
}

// A remote is a remote agent, called as a tool.
type remote struct {
	client  *a2aclient.Client
	name    string // the card's
	timeout time.Duration
}

// call sends the prompt to the agent and returns its answer.
func (r *remote) call(ctx context.Context, in prompt) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(in.Prompt))
	var t task
	for ev, err := range r.client.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: msg}) {
		if err != nil {
			r.cancel(ctx, t.id)
			if ctx.Err() != nil {
				err = context.Cause(ctx)
			}
			return "", fmt.Errorf("agent %q: %w", r.name, err)
		}
		status, added := t.add(ev)
		if status != "" {
			robby.Notify(ctx, robby.Notice{Server: r.name, Message: status})
		}
		if added != "" {
			robby.NotifyAgent(ctx, robby.Event{Kind: robby.EventText, Delta: added})
		}
		if t.done() {
			break
		}
	}
	answer, err := t.result()
	if err != nil {
		if !t.state.Terminal() {
			r.cancel(ctx, t.id)
		}
		return "", fmt.Errorf("agent %q: %w", r.name, err)
	}
	return answer, nil
}

// cancel cancels the task id, if any, as best it can: the call gave up on it.
func (r *remote) cancel(ctx context.Context, id a2a.TaskID) {
	if id == "" {
		return
	}
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer stop()
	r.client.CancelTask(ctx, &a2a.CancelTaskRequest{ID: id})
}

// errNoAnswer reports a task that ended without a word.
var errNoAnswer = errors.New("the task ended without an answer")

// withHeader returns a client like c that adds header to each request.
func withHeader(c *http.Client, header http.Header) *http.Client {
	if len(header) == 0 {
		return c
	}
	hc := *c
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = headerTransport{base: base, header: header}
	return &hc
}

// A headerTransport adds its header to each request.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

// RoundTrip implements [http.RoundTripper]. It leaves req as it was.
func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for name, values := range t.header {
		req.Header[name] = values
	}
	return t.base.RoundTrip(req)
}
