package robby

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// An Option configures an [Agent]. Options are applied in order by [New],
// which reports any invalid value as an error.
type Option func(*config) error

// Defaults used by [New] when no option says otherwise.
const (
	DefaultMaxTurns            = 8
	DefaultMaxToolCallsPerTurn = 4
	DefaultToolTimeout         = 2 * time.Minute
	DefaultMaxToolOutput       = 64 << 10 // bytes
)

// config collects what the options set. [New] validates it once, and the
// agent never changes it afterwards.
type config struct {
	baseURL, apiKey *string
	client          *openai.Client
	requestOptions  []option.RequestOption

	model     string
	system    string
	params    openai.ChatCompletionNewParams
	tools     []Tool
	maxTurns  int
	maxCalls  int
	timeout   time.Duration
	maxOutput int
	logger    *slog.Logger
	secrets   secrets // computed by New, once the options are applied
	finalTurn bool
	approve   func(context.Context, ToolCall) error
	toolMW    []ToolMiddleware
	modelMW   []ModelMiddleware
	fallbacks []Fallback
	prices    map[string]Price
	budget    Budget
	mcp       []MCPServer
	mcpTools  []string
	portable  bool
	guards    *guardSet // WithGuards: guard.go

	window     int // the model's context window, 0 if not given
	compaction CompactionPolicy
	pinFirst   bool

	name, description string // WithName, WithDescription: handoff.go
	handoffs          []Handoff
	returnToRoot      bool
	team              []*Agent

	tracerProvider trace.TracerProvider
	meterProvider  metric.MeterProvider
	tracedContent  bool
	telemetry      *telemetry // made by New from the three above
}

func defaultConfig() config {
	return config{
		maxTurns:  DefaultMaxTurns,
		maxCalls:  DefaultMaxToolCallsPerTurn,
		timeout:   DefaultToolTimeout,
		maxOutput: DefaultMaxToolOutput,
		logger:    slog.New(slog.DiscardHandler),
	}
}

// WithBaseURL sets the chat-completions endpoint, such as
// "http://localhost:12434/engines/v1" for Docker Model Runner or
// "http://localhost:11434/v1" for Ollama. Without it, OPENAI_BASE_URL applies,
// then OpenAI's own endpoint. It must be an absolute http or https URL with
// a host. Anything else, such as "127.0.0.1:8080/v1" without its scheme,
// is an error from [New] that quotes it.
func WithBaseURL(url string) Option {
	return func(c *config) error {
		if url == "" {
			return errors.New("robby: WithBaseURL: empty URL")
		}
		if err := checkBaseURL("WithBaseURL", url); err != nil {
			return err
		}
		c.baseURL = &url
		return nil
	}
}

// checkBaseURL refuses what is not an absolute http(s) URL with a host. The
// error begins with where the URL was given.
func checkBaseURL(where, url string) error {
	u, err := neturl.Parse(url)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("robby: %s: %q is not an absolute http:// or https:// URL with a host, such as \"http://localhost:11434/v1\"", where, url)
	}
	return nil
}

// WithAPIKey sets the bearer token sent to the endpoint. An empty key is
// allowed: local servers such as Docker Model Runner, Ollama and llama.cpp
// need none. Without it, OPENAI_API_KEY applies.
func WithAPIKey(key string) Option {
	return func(c *config) error {
		c.apiKey = &key
		return nil
	}
}

// WithClient makes the agent use an openai-go client the caller configured,
// with its transport, retries and middleware. [WithBaseURL], [WithAPIKey]
// and [WithRequestOptions] still apply on top of it, per request.
func WithClient(client openai.Client) Option {
	return func(c *config) error {
		c.client = &client
		return nil
	}
}

// WithRequestOptions adds openai-go request options to every request the
// agent sends: headers, retries, timeouts, middleware. A [Fallback] on
// another endpoint gets them without their credentials (see
// [Fallback.APIKey]). A middleware among them runs for it too, and sees
// where the request goes.
func WithRequestOptions(opts ...option.RequestOption) Option {
	return func(c *config) error {
		c.requestOptions = append(c.requestOptions, opts...)
		return nil
	}
}

// WithModel sets the model name sent with every request. It is required,
// unless [WithParams] names the model.
func WithModel(name string) Option {
	return func(c *config) error {
		if name == "" {
			return errors.New("robby: WithModel: empty model name")
		}
		c.model = name
		return nil
	}
}

// WithSystem sets a system prompt that opens the conversation.
func WithSystem(prompt string) Option {
	return func(c *config) error {
		c.system = prompt
		return nil
	}
}

// WithParams sets the base request: temperature, seed, max tokens and any
// other chat-completions parameter. Its Messages, if any, begin the
// conversation, after the [WithSystem] prompt. Its Tools are ignored; give
// tools with [WithTools]. [WithModel] overrides its Model.
func WithParams(params openai.ChatCompletionNewParams) Option {
	return func(c *config) error {
		c.params = params
		return nil
	}
}

// WithTools adds tools the model may call. Names must be unique and match
// the pattern the chat-completions API accepts: ^[a-zA-Z0-9_-]{1,64}$.
func WithTools(tools ...Tool) Option {
	return func(c *config) error {
		c.tools = append(c.tools, tools...)
		return nil
	}
}

// WithMaxTurns bounds how many model requests one [Agent.Run] or
// [Agent.Stream] makes (default [DefaultMaxTurns]). At the limit, the run
// ends with [ErrMaxTurns], unless [WithFinalAnswer] is set.
func WithMaxTurns(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("robby: WithMaxTurns: %d is not a positive number of turns", n)
		}
		c.maxTurns = n
		return nil
	}
}

// WithMaxToolCallsPerTurn bounds how many tool calls of one model turn run
// (default [DefaultMaxToolCallsPerTurn]). They run concurrently. Calls past
// the limit are not run, and their tool messages tell the model so.
func WithMaxToolCallsPerTurn(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("robby: WithMaxToolCallsPerTurn: %d is not a positive number of calls", n)
		}
		c.maxCalls = n
		return nil
	}
}

// WithToolTimeout bounds each tool call (default [DefaultToolTimeout]).
// Zero means no bound other than the run's context.
func WithToolTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("robby: WithToolTimeout: negative duration %v", d)
		}
		c.timeout = d
		return nil
	}
}

// WithMaxToolOutput bounds the bytes of a tool's output the model reads
// (default [DefaultMaxToolOutput]). Past it, the output is cut and the
// model told how much it does not see. Zero means no bound. The
// [ToolResult] keeps what the model read.
func WithMaxToolOutput(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("robby: WithMaxToolOutput: negative size %d", n)
		}
		c.maxOutput = n
		return nil
	}
}

// WithLogger sets where the agent logs requests, tool calls and recovered
// faults. The default discards everything. API keys are never logged.
func WithLogger(logger *slog.Logger) Option {
	return func(c *config) error {
		if logger == nil {
			return errors.New("robby: WithLogger: nil logger")
		}
		c.logger = logger
		return nil
	}
}

// WithApproval has approve decide on every tool call, local or MCP, before
// it runs, once its arguments were checked. An error refuses the call: the
// model reads it (with [ErrNotApproved]) and the loop goes on. approve may
// be called concurrently, for the calls of one turn. It may block to ask a
// person, within the tool timeout. It is the outermost tool middleware
// ([WithToolMiddleware]). A panic in it is recovered as a tool's.
func WithApproval(approve func(ctx context.Context, call ToolCall) error) Option {
	return func(c *config) error {
		if approve == nil {
			return errors.New("robby: WithApproval: nil function")
		}
		c.approve = approve
		return nil
	}
}

// WithFinalAnswer makes the last allowed turn ask the model for an answer
// without offering it tools. A run that reaches [WithMaxTurns] then ends
// with the model's summary of the work done instead of [ErrMaxTurns].
func WithFinalAnswer() Option {
	return func(c *config) error {
		c.finalTurn = true
		return nil
	}
}

// WithPortableSchemas rewrites the tools' input schemas, local and MCP,
// into the subset of JSON Schema every provider accepts. It inlines $refs
// and drops keywords such as $schema, additionalProperties or
// patternProperties. A type list with "null" (a [NewTool] pointer field)
// becomes nullable. Gemini's OpenAI-compatible endpoint rejects requests
// whose schemas use them. Only what the model is sent changes: arguments
// are still checked against the tool's own schema. An MCP tool whose
// schema cannot be rewritten (a recursive one) is left out, with a
// warning. A local one is an error from [New].
func WithPortableSchemas() Option {
	return func(c *config) error {
		c.portable = true
		return nil
	}
}
