package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/guardfile"
	"github.com/robby-go/robby/knowledge"
	"github.com/robby-go/robby/mcpconfig"
	"github.com/robby-go/robby/team"
)

// Defaults when neither a flag nor the environment says otherwise. They are
// Docker Model Runner's local endpoint and a small model it serves.
const (
	defaultBaseURL = "http://localhost:12434/engines/v1"
	defaultModel   = "ai/qwen2.5"
)

// agentFlags are the flags every subcommand takes.
type agentFlags struct {
	model, system, mcp, baseURL, apiKey string
	skills                              string     // a folder of skills
	skillsRoot                          *os.Root   // -skills, opened by newAgent, closed by close
	agents                              string     // -agents: a team file
	guards                              string     // -guards: a guards file
	team                                *team.Team // built by newAgent from -agents, closed by close
	maxTurns                            int
	budget                              budgetFlags
	verbose, toolSearch                 bool
	kb                                  kbFlags
	kbase                               *knowledge.Base // opened by newAgent, closed by close
	compact                             string          // a compaction policy, or "off"
	contextWindow                       int
	telemetry                           telemetryFlags
	flush                               func()         // set by newAgent: flushes and stops the exporters of -otel and -trace
	extra                               []robby.Option // set by the command: options of its own
}

func (f *agentFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.model, "model", defaultModel, "model name (env ROBBY_MODEL)")
	fs.StringVar(&f.system, "system", "", "system prompt")
	fs.StringVar(&f.mcp, "mcp", "", "mcpServers JSON `file` whose servers' tools the agent uses")
	fs.StringVar(&f.skills, "skills", "", "`folder` of skills (a folder per skill, with a SKILL.md), which the agent loads when a task needs one; their scripts are never run")
	fs.BoolVar(&f.toolSearch, "tool-search", false, "defer every tool of -mcp's servers: the model finds them with search_tools, and requests stay small")
	fs.StringVar(&f.agents, "agents", "", "team `file` (JSON or YAML) of agents that hand the conversation over to one another; -system, -model and the limits are their defaults, and each uses the -mcp servers it names (see docs/TEAMS.md)")
	fs.StringVar(&f.guards, "guards", "", "guards `file` (JSON or YAML) that check the input, tool calls, tool results and the output, each served stream too (see docs/GUARDS.md)")
	fs.StringVar(&f.baseURL, "base-url", defaultBaseURL, "the OpenAI-compatible endpoint, up to /v1 (env OPENAI_BASE_URL)")
	fs.StringVar(&f.apiKey, "api-key", "", "API key, empty for local servers (env OPENAI_API_KEY)")
	fs.IntVar(&f.maxTurns, "max-turns", robby.DefaultMaxTurns, "model requests per answer at most")
	f.budget.register(fs)
	fs.BoolVar(&f.verbose, "v", false, "log requests and MCP servers to stderr")
	f.kb.register(fs)
	fs.StringVar(&f.compact, "compact", "drop", "fit long conversations into the context window: drop (the oldest turns), summarize, or off")
	fs.IntVar(&f.contextWindow, "context", 0, "the model's context window in tokens; 0 asks the server, or learns it from its errors")
	f.telemetry.register(fs)
}

// compaction returns the options of the -compact and -context flags.
func (f *agentFlags) compaction() ([]robby.Option, error) {
	var opts []robby.Option
	switch f.compact {
	case "drop":
		opts = append(opts, robby.WithCompaction(robby.DropOldestTurns()))
	case "summarize":
		opts = append(opts, robby.WithCompaction(robby.SummarizeOldTurns()))
	case "off":
	default:
		return nil, fmt.Errorf("bad -compact %q: give drop, summarize or off", f.compact)
	}
	if f.contextWindow < 0 {
		return nil, fmt.Errorf("bad -context %d: give a number of tokens, or 0", f.contextWindow)
	}
	if f.contextWindow > 0 {
		opts = append(opts, robby.WithContextWindow(f.contextWindow))
	}
	return opts, nil
}

// check reports a flag value the agent cannot be built from, in the
// command line's words, not the library's.
func (f *agentFlags) check() error {
	switch {
	case f.baseURL == "":
		return errors.New("no endpoint: give -base-url or set OPENAI_BASE_URL")
	case f.model == "":
		return errors.New("no model: give -model or set ROBBY_MODEL")
	case f.maxTurns < 1:
		return fmt.Errorf("-max-turns is %d: it must be at least 1", f.maxTurns)
	case f.toolSearch && f.mcp == "":
		return errors.New("-tool-search defers the tools of -mcp's servers: give -mcp too")
	}
	if err := f.budget.check(); err != nil {
		return err
	}
	u, err := url.Parse(f.baseURL)
	if err != nil {
		return fmt.Errorf("bad -base-url (or OPENAI_BASE_URL) %q: %v", f.baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("bad -base-url (or OPENAI_BASE_URL) %q: not an http:// or https:// URL with a host, such as %s",
			f.baseURL, defaultBaseURL)
	}
	return nil
}

// newAgent builds the agent the flags describe.
func (f *agentFlags) newAgent(stderr io.Writer) (*robby.Agent, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(quietLeftOut{slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})})
	opts := []robby.Option{
		robby.WithBaseURL(f.baseURL), robby.WithAPIKey(f.apiKey), robby.WithModel(f.model),
		robby.WithMaxTurns(f.maxTurns), robby.WithFinalAnswer(), robby.WithLogger(logger),
	}
	budget, err := f.budget.options(f.model)
	if err != nil {
		return nil, err
	}
	opts = append(opts, budget...)
	compaction, err := f.compaction()
	if err != nil {
		return nil, err
	}
	opts = append(opts, compaction...)
	if f.guards != "" {
		guards, err := guardfile.Load(f.guards)
		if err != nil {
			return nil, err
		}
		opts = append(opts, robby.WithGuards(guards...))
	}
	servers, err := f.mcpServers(stderr, logger)
	if err != nil {
		return nil, err
	}
	if f.kb.file != "" {
		if f.kb.mode != "tool" && f.kb.mode != "context" {
			return nil, fmt.Errorf("-kb-mode %q: want tool or context", f.kb.mode)
		}
		kb, err := f.kb.open(f.baseURL, f.apiKey)
		if err != nil {
			return nil, err
		}
		f.kbase = kb
		if f.kb.mode == "tool" {
			opts = append(opts, robby.WithTools(knowledge.Tool(kb)))
		}
	}
	system, skillTools, err := f.loadSkills(stderr)
	if err != nil {
		f.close()
		return nil, err
	}
	if system != "" {
		opts = append(opts, robby.WithSystem(system))
	}
	opts = append(opts, robby.WithTools(skillTools...))
	telemetry, flush, err := f.telemetry.options(context.Background(), stderr)
	if err != nil {
		f.close()
		return nil, err
	}
	f.flush = flush
	opts = slices.Concat(opts, telemetry, f.extra)
	if f.agents != "" {
		return f.newTeam(stderr, opts, servers)
	}
	if len(servers) > 0 {
		opts = append(opts, robby.WithMCP(servers...))
	}
	agent, err := robby.New(opts...)
	if err != nil {
		f.close()
		return nil, err
	}
	printMCPStatus(stderr, agent)
	return agent, nil
}

// mcpServers returns the servers of the -mcp file, deferred with
// -tool-search.
func (f *agentFlags) mcpServers(stderr io.Writer, logger *slog.Logger) ([]robby.MCPServer, error) {
	if f.mcp == "" {
		return nil, nil
	}
	oauth, err := oauthOptions(stderr, logger)
	if err != nil {
		return nil, err
	}
	servers, err := mcpconfig.Load(f.mcp, mcpconfig.WithOAuth(oauth...))
	if err != nil {
		return nil, err
	}
	if f.toolSearch {
		for i := range servers {
			servers[i] = servers[i].WithDeferLoading()
		}
	}
	return servers, nil
}

// newTeam builds the team of the -agents file, each agent over base, and
// returns its root.
func (f *agentFlags) newTeam(stderr io.Writer, base []robby.Option, servers []robby.MCPServer) (*robby.Agent, error) {
	file, err := team.Load(f.agents)
	if err == nil {
		// A remote agent's card is read now: a server that does not answer
		// must not hold the command up forever.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		f.team, err = file.Build(ctx, base, servers)
		cancel()
	}
	if err != nil {
		f.close()
		return nil, err
	}
	for _, a := range f.team.Agents() {
		printMCPStatus(stderr, a)
	}
	return f.team.Root, nil
}

// printMCPStatus says which MCP servers are up, one line a server, and why
// those left out are. Without a logger, nothing else would say it.
func printMCPStatus(w io.Writer, agent *robby.Agent) {
	for _, st := range agent.MCPStatus() {
		if st.Connected {
			fmt.Fprintf(w, "robby: MCP server %s (%s): %d tools\n", st.Name, st.Transport, st.Tools)
		} else {
			why := strings.TrimPrefix(st.Err.Error(), "robby: ")
			why = strings.TrimPrefix(why, fmt.Sprintf("MCP server %q: ", st.Name))
			fmt.Fprintf(w, "robby: MCP server %s (%s) left out: %s\n", st.Name, st.Transport, firstLine(why))
		}
	}
}

// leftOutMessage is the message of the agent's warning that an optional
// MCP server was left out.
const leftOutMessage = "robby: optional MCP server left out"

// quietLeftOut drops the agent's warning that an optional MCP server was
// left out: printMCPStatus says it once, more plainly.
type quietLeftOut struct{ slog.Handler }

func (h quietLeftOut) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == leftOutMessage {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h quietLeftOut) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quietLeftOut{h.Handler.WithAttrs(attrs)}
}

func (h quietLeftOut) WithGroup(name string) slog.Handler {
	return quietLeftOut{h.Handler.WithGroup(name)}
}

// close closes what newAgent opened besides the agent.
func (f *agentFlags) close() {
	if f.team != nil {
		f.team.Close()
	}
	if f.kbase != nil {
		f.kbase.Close()
	}
	if f.skillsRoot != nil {
		f.skillsRoot.Close()
	}
	if f.flush != nil {
		f.flush()
	}
}

// explain adds a hint to an error that says the endpoint did not answer,
// or answered 404 at a base URL without /v1.
func explain(err error, baseURL string) error {
	var netErr *net.OpError
	var apiErr *robby.APIError
	switch {
	case errors.As(err, &netErr) && baseURL == defaultBaseURL:
		return fmt.Errorf("%w\nnothing answers at %s, the default endpoint: start Docker Model Runner (docker desktop enable model-runner --tcp 12434), "+
			"or point -base-url (or OPENAI_BASE_URL) at Ollama (http://localhost:11434/v1) or another endpoint", err, baseURL)
	case errors.As(err, &netErr):
		return fmt.Errorf("%w\nnothing answers at %s: start the server there, or correct -base-url (or OPENAI_BASE_URL)", err, baseURL)
	case errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound && !strings.HasSuffix(strings.TrimSuffix(baseURL, "/"), "/v1"):
		return fmt.Errorf("%w\n%s answered 404, and OpenAI-compatible servers serve under /v1: try -base-url %s/v1", err, baseURL, strings.TrimSuffix(baseURL, "/"))
	case errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w\n%s answered 404: check -base-url, and that the server serves the model (-model)", err, baseURL)
	}
	return err
}

// firstLine returns s up to its first line break.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
