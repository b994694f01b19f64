package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/a2aserver"
	"github.com/robby-go/robby/agui"
	"github.com/robby-go/robby/internal/httpapi"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/temporal"
	"github.com/robby-go/robby/uistream"
)

// defaultAddr is where robby serve listens unless told otherwise: this
// machine only.
const defaultAddr = "127.0.0.1:8080"

var serveCommand = commandSpec{
	name: "serve", synopsis: "robby serve [flags]",
	summary: "serve the agent over HTTP: a chat page, the OpenAI-compatible API, the AI SDK's UI stream and AG-UI",
	about: "Serves the agent, until interrupted: a chat page at /, the Vercel AI SDK's UI message stream at\n" +
		"POST /api/chat (useChat's default), AG-UI at POST /ag-ui, and an OpenAI-compatible endpoint\n" +
		"(POST /v1/chat/completions, GET /v1/models, POST /v1/responses, GET and DELETE /v1/responses/{id})\n" +
		"under the name given by -model. It listens on " + defaultAddr + "; on any other address it needs a\n" +
		"bearer token (-token, -token-file or ROBBY_TOKEN), or -insecure-no-token. Each token is one user's\n" +
		"(USER:TOKEN; a bare TOKEN is the default user's): with -store, the chats and responses a user\n" +
		"makes are kept, and only that user reads or continues them. On SIGTERM it closes its listener and\n" +
		"lets the requests in flight finish for -drain, then cancels the rest, each answer stored as it was.\n" +
		"With -a2a it also serves the agent to other agents over A2A: its card at /.well-known/agent-card.json,\n" +
		"JSON-RPC at POST /a2a, HTTP+JSON under /a2a/rest (docs/A2A.md).",
	env: slices.Concat(tokenEnv, agentEnv), setup: setupServe,
}

// serveFlags are robby serve's flags.
type serveFlags struct {
	agentFlags
	addr        string
	tokens      tokenFlags
	store       string
	origins     []string
	maxMessages int
	showTools   bool
	heartbeat   time.Duration
	limits      limitFlags
	durable     durableFlags
	http        httpFlags
	a2a         bool
	publicURL   string
	approve     []string
}

func (s *serveFlags) register(fs *flag.FlagSet) {
	s.agentFlags.register(fs)
	fs.StringVar(&s.addr, "addr", defaultAddr, "address to listen on")
	s.tokens.register(fs)
	fs.StringVar(&s.store, "store", "", "SQLite `file` (or postgres:// URL of a PostgreSQL database, which replicas share) that keeps each user's chats (the page, /api/chat, /ag-ui) and responses (POST /v1/responses), made if missing in a directory that exists (default: none kept)")
	fs.Func("cors", "web `origin` whose pages may call the endpoint from a browser (such as https://chat.example.com); repeat or separate with commas", appendOrigins(&s.origins))
	fs.IntVar(&s.maxMessages, "max-messages", openaiserver.DefaultMaxMessages, "messages a request may hold at most")
	fs.BoolVar(&s.showTools, "show-tools", false, "stream tool steps to clients as reasoning")
	fs.DurationVar(&s.heartbeat, "heartbeat", openaiserver.DefaultHeartbeat, "how often a running response (or A2A task) notes in the -store that it goes on; one silent for three is taken for stopped (and, with -temporal, a response or task taken over); replicas sharing a store share it")
	fs.BoolVar(&s.a2a, "a2a", false, "also serve the agent over A2A (the Agent2Agent protocol): its card at /.well-known/agent-card.json, JSON-RPC at /a2a, HTTP+JSON under /a2a/rest; with -store, each context is a stored conversation")
	fs.StringVar(&s.publicURL, "public-url", "", "base `URL` clients reach the server at, such as https://agents.example.com, when a proxy stands between: the A2A card names its interfaces under it (default: the host each request reached)")
	fs.Func("approve", "`tool` whose calls wait for the A2A client's approval (the task asks, INPUT_REQUIRED; docs/A2A.md); * for all; repeat or separate with commas; needs -a2a; with -temporal the task's workflow waits", appendOrigins(&s.approve))
	s.limits.register(fs)
	s.http.register(fs)
	s.durable.register(fs, "HOST:PORT of a Temporal frontend: run background responses (and, with -a2a, A2A tasks) as durable runs, on 'robby worker's")
}

func setupServe(c *command) func(context.Context) error {
	var s serveFlags
	s.register(c.fs)
	return func(ctx context.Context) error { return s.serve(ctx, c.stderr) }
}

// serve serves the agent until ctx is done.
func (s *serveFlags) serve(ctx context.Context, stderr io.Writer) error {
	f, d := &s.agentFlags, &s.durable
	if err := checkAddr(s.addr); err != nil {
		return err
	}
	tokens, err := s.tokens.resolve(s.addr)
	if err != nil {
		return err
	}
	if err := checkServeLimits(s.heartbeat, s.maxMessages); err != nil {
		return err
	}
	if err := s.checkA2A(); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	lim, err := s.limits.limiter(f, tokens, log)
	if err != nil {
		return err
	}
	agent, err := f.newAgent(stderr)
	if err != nil {
		return err
	}
	defer f.close()
	defer agent.Close()
	sh := served{tokens: tokens, origins: s.origins, maxMessages: s.maxMessages, log: log}
	if s.store != "" {
		store, err := openStore(ctx, s.store, false)
		if err != nil {
			return err
		}
		defer store.Close()
		sh.store = store
	}
	opts := sh.openai()
	opts.ShowToolSteps, opts.Heartbeat = s.showTools, s.heartbeat
	var tasks a2aserver.DurableRunner // nil: A2A tasks run here
	if d.addr != "" {
		c, err := d.dial(stderr)
		if err != nil {
			return err
		}
		defer c.Close()
		opts.Background = &temporal.ResponsesRunner{Client: c, TaskQueue: d.queue, Agent: durableAgent}
		tasks = &temporal.TaskRunner{Client: c, TaskQueue: d.queue, Agent: durableAgent}
	}
	endpoint := openaiserver.New(map[string]*robby.Agent{f.model: agent}, opts)
	defer endpoint.Close() // background responses still running end as cancelled, but durable ones, left to another replica
	if s.a2a {
		a2opts := sh.a2a(s.publicURL)
		a2opts.Heartbeat, a2opts.Approve, a2opts.Durable = s.heartbeat, s.approve, tasks
		a2h := a2aserver.New(agent, a2opts)
		defer a2h.Close()
		sh.a2aHandler = a2h
	}
	handler := lim.wrap(serveMux(agent, endpoint, sh), sh.store)

	ln, err := listen(s.addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "robby: serving %s (%d tools) on http://%s/v1 → %s\n", f.model, len(agent.Tools()), ln.Addr(), f.baseURL)
	fmt.Fprintf(stderr, "robby: chat page at http://%s/\n", ln.Addr())
	if sh.store != nil {
		fmt.Fprintf(stderr, "robby: keeping chats and responses in %s\n", storeName(s.store))
	}
	if s.a2a {
		fmt.Fprintf(stderr, "robby: A2A card at http://%s%s\n", ln.Addr(), a2aserver.CardPath)
	}
	warnOpen(stderr, s.addr, len(tokens) > 0)
	return serveHTTP(ctx, ln, handler, s.http, stderr)
}

// appendOrigins is the setter of -cors (and -approve): values repeated or
// separated with commas.
func appendOrigins(origins *[]string) func(string) error {
	return func(v string) error {
		for o := range strings.SplitSeq(v, ",") {
			if o = strings.TrimSpace(o); o != "" {
				*origins = append(*origins, o)
			}
		}
		return nil
	}
}

// checkServeLimits refuses a heartbeat or a message limit that cannot work.
func checkServeLimits(heartbeat time.Duration, maxMessages int) error {
	if heartbeat <= 0 {
		return fmt.Errorf("-heartbeat is %v: it must be positive", heartbeat)
	}
	if maxMessages < 1 {
		return fmt.Errorf("-max-messages is %d: it must be at least 1", maxMessages)
	}
	return nil
}

// checkA2A refuses a -public-url that is not an absolute http(s) URL, and
// A2A's flags without -a2a.
func (s *serveFlags) checkA2A() error {
	v, a2a := s.publicURL, s.a2a
	if len(s.approve) > 0 && !a2a {
		return usageError{errors.New("-approve names the tools whose calls wait for the A2A client's approval: give -a2a too")}
	}
	if v == "" {
		return nil
	}
	if !a2a {
		return usageError{errors.New("-public-url names where the A2A card's interfaces are: give -a2a too")}
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return usageError{fmt.Errorf("bad -public-url %q: give an http or https URL, such as https://agents.example.com", v)}
	}
	return nil
}

// served is what robby serve's endpoints share: the users' tokens, the store
// of their chats and responses, the web origins, the message limit and the
// log. Each endpoint's options are made from it.
type served struct {
	tokens      map[string]string
	store       robby.Store
	origins     []string
	maxMessages int
	log         *slog.Logger
	a2aHandler  http.Handler // nil without -a2a
}

func (s served) openai() openaiserver.Options {
	return openaiserver.Options{Tokens: s.tokens, Store: s.store, CORSOrigins: s.origins, MaxMessages: s.maxMessages, Logger: s.log}
}

func (s served) uistream() uistream.Options {
	return uistream.Options{Tokens: s.tokens, Store: s.store, CORSOrigins: s.origins, MaxMessages: s.maxMessages, Logger: s.log}
}

func (s served) a2a(publicURL string) a2aserver.Options {
	return a2aserver.Options{PublicURL: publicURL, Tokens: s.tokens, Store: s.store, CORSOrigins: s.origins, Logger: s.log}
}

func (s served) agui() agui.Options {
	return agui.Options{Tokens: s.tokens, Store: s.store, CORSOrigins: s.origins, MaxMessages: s.maxMessages, Logger: s.log}
}

// serveMux routes robby serve's requests: the page and the prompts it offers,
// the UI message stream and its chats, AG-UI, and the OpenAI-compatible endpoint. The endpoint also
// answers unknown URLs. All but the page check the same tokens and origins.
func serveMux(agent *robby.Agent, endpoint *openaiserver.Handler, sh served) http.Handler {
	page := pageHandler(agent, httpapi.NewGuard(sh.tokens, sh.origins), sh.log)
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", page)
	mux.Handle("GET /assets/", page)
	mux.Handle("/api/prompts", page)
	mux.Handle("/api/prompts/", page)
	mux.Handle("/api/", uistream.New(agent, sh.uistream()))
	mux.Handle("/ag-ui", agui.New(agent, sh.agui()))
	if sh.a2aHandler != nil {
		mux.Handle(a2aserver.CardPath, sh.a2aHandler)
		mux.Handle(a2aserver.JSONRPCPath+a2aserver.CardPath, sh.a2aHandler)
		mux.Handle(a2aserver.JSONRPCPath, sh.a2aHandler)
		mux.Handle(a2aserver.RESTPath+"/", sh.a2aHandler)
	}
	mux.Handle("/", endpoint)
	return mux
}
