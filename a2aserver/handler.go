package a2aserver

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/httpapi"
)

// CardPath is where a [Handler] serves its agent card, the well-known path of
// A2A. It serves it under [JSONRPCPath] too, for clients that look for the
// card beside the endpoint they were given.
const CardPath = "/.well-known/agent-card.json"

// JSONRPCPath is where a [Handler] serves A2A's JSON-RPC binding.
const JSONRPCPath = "/a2a"

// DefaultHeartbeat is how often, by default, a running task notes in the
// store that its run goes on.
const DefaultHeartbeat = 10 * time.Second

// RESTPath is the prefix under which a [Handler] serves A2A's HTTP+JSON
// binding (POST /a2a/rest/message:send, GET /a2a/rest/tasks/{id}, ...).
const RESTPath = "/a2a/rest"

// Options configures a [Handler]. The zero value serves anyone (no token),
// keeps conversations in memory, and names its interfaces at the host each
// request reached.
type Options struct {
	// Name and Description are the agent card's. Name defaults to the agent's
	// name ([robby.WithName]), else "robby"; Description to a sentence naming
	// it.
	Name, Description string
	// Version is the card's version of the agent (default "1.0.0").
	Version string
	// PublicURL is the base URL clients reach the handler at, such as
	// "https://agents.example.com", when a proxy stands between. The card names
	// the interfaces under it. Without it, the card names them at the host and
	// scheme of the request that read it.
	PublicURL string
	// Tokens are the bearer tokens a request may carry, each mapped to the
	// user it authenticates. A user reads, continues and cancels only their own
	// tasks and contexts. With none, every request is of the user "". A
	// request without a listed token is answered 401. The card itself is
	// public.
	Tokens map[string]string
	// Store keeps each context's conversation, the stored conversation of its
	// user named by the contextId. A store that is a [robby.TaskStore] too,
	// as sqlitestore's and pgstore's are, keeps the tasks, so they outlive
	// the process and are shared by the replicas using the store. Without
	// it, conversations and tasks are kept in the handler's memory, and lost
	// with it. Closing the store is the caller's job.
	Store robby.Store
	// Heartbeat is how often a running task's record notes in the store that
	// its run goes on (default [DefaultHeartbeat]). A task still working
	// whose record went three heartbeats without a write lost its server (it
	// crashed, or was killed): it reads failed, saying so. Replicas sharing
	// a store should share the setting.
	Heartbeat time.Duration
	// Approve names the agent's tools whose calls wait for the client's
	// approval; "*" names them all. A turn calling one puts the task in
	// INPUT_REQUIRED, asking; the client's next message on the task
	// answers (see the package doc). With it, runs go one turn at a time
	// ([robby.WithOneTurn]), so nothing runs before the answer. A team's
	// calls ([robby.WithTeam]) run on the agent that made them, which the
	// ask names.
	Approve []string
	// CallerTools are tools the client runs ([robby.WithCallerTools]),
	// offered to the model beside the agent's. A call of one puts the task in
	// INPUT_REQUIRED, asking for its result; the client's next message on
	// the task gives it.
	CallerTools []openai.FunctionDefinitionParam
	// Durable, if set, runs each task durably, elsewhere than in the
	// handler's process (package temporal's TaskRunner, on Temporal). The
	// task's status and artifacts follow its run's progress. Cancel stops
	// the run from any replica. A task whose replica stopped mid-run is
	// taken over by the replica that next reads it, with [Options.Store]
	// a [robby.TaskStore]: it completes there. With Approve, a run's calls
	// that wait for an approval put the task in INPUT_REQUIRED, asking; the
	// client's answer goes to the run. CallerTools do not apply to durable
	// runs yet.
	Durable DurableRunner
	// CORSOrigins are the web origins (or "*") whose pages may call the handler
	// from a browser. A request from another origin is answered 403.
	CORSOrigins []string
	// MaxRequestBytes bounds a request's body (default 8 MiB).
	MaxRequestBytes int64
	// Logger receives one line per failed run, with its task's ID. The default
	// discards.
	Logger *slog.Logger
}

// A Handler serves an agent over A2A (see the package doc). It is safe for
// concurrent use. Closing the agent is the caller's job, once the handler is
// done.
type Handler struct {
	agent   *robby.Agent
	opts    Options
	guard   *httpapi.Guard
	rpc     http.Handler
	rest    http.Handler
	card    http.Handler
	exec    *executor
	stopRun context.CancelFunc
}

// New serves agent. opts is copied.
func New(agent *robby.Agent, opts Options) *Handler {
	var maxMessages int
	guard := httpapi.Shared{Tokens: &opts.Tokens, CORSOrigins: &opts.CORSOrigins,
		MaxRequestBytes: &opts.MaxRequestBytes, MaxMessages: &maxMessages, Logger: &opts.Logger}.Fill()
	h := &Handler{agent: agent, opts: opts, guard: guard}
	base, stop := context.WithCancel(context.Background())
	h.stopRun = stop
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	h.opts.Heartbeat = opts.Heartbeat
	h.exec = &executor{agent: agent, store: opts.Store, log: opts.Logger, base: base, heartbeat: opts.Heartbeat, durable: opts.Durable,
		approve: slices.Clone(opts.Approve), callerTools: slices.Clone(opts.CallerTools),
		running: &running{set: map[[2]string]bool{}}, mem: &memory{convs: map[string]*robby.Agent{}}}
	var tasks taskstore.Store = taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{Authenticator: taskOwner})
	if ts, ok := opts.Store.(robby.TaskStore); ok {
		h.exec.tasks = ts
		tasks = &storedTasks{ts: ts, running: h.exec.running, heartbeat: opts.Heartbeat, adopt: h.exec.adopt, closed: base}
	}
	rh := a2asrv.NewHandler(h.exec,
		a2asrv.WithTaskStore(tasks),
		a2asrv.WithLogger(opts.Logger),
		a2asrv.WithCallInterceptors(userInterceptor{tasks: tasks}),
		a2asrv.WithCapabilityChecks(&a2a.AgentCapabilities{Streaming: true}))
	h.rpc = a2asrv.NewJSONRPCHandler(rh)
	h.rest = http.StripPrefix(RESTPath, a2asrv.NewRESTHandler(rh))
	h.card = a2asrv.NewAgentCardHandler(a2asrv.AgentCardProducerFn(h.cardOf))
	return h
}

// ServeHTTP serves the card to anyone, and the bindings to the holders of a
// token.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == CardPath || r.URL.Path == JSONRPCPath+CardPath {
		h.card.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), baseKey{}, h.baseURL(r))))
		return
	}
	r, ok := h.guard.Admit(w, r)
	if !ok {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, h.opts.MaxRequestBytes)
	r = r.WithContext(context.WithValue(r.Context(), userKey{}, httpapi.User(r)))
	switch {
	case r.URL.Path == JSONRPCPath:
		h.rpc.ServeHTTP(w, r)
	case len(r.URL.Path) > len(RESTPath) && r.URL.Path[:len(RESTPath)+1] == RESTPath+"/":
		h.rest.ServeHTTP(w, r)
	default:
		http.NotFound(w, r)
	}
}

// Close cancels the runs still going on. Their tasks end canceled or failed,
// as far as they were saved.
func (h *Handler) Close() error {
	h.stopRun()
	return nil
}

// userKey is the context key of the user a request authenticated as.
type userKey struct{}

// userInterceptor gives each call the user its request authenticated as:
// the task store keeps each task's owner, and the executor runs in that
// user's conversations. It refuses a subscription to a task the user does
// not own: a2asrv attaches one to a running task without asking the store.
type userInterceptor struct {
	a2asrv.PassthroughCallInterceptor
	tasks taskstore.Store
}

func (u userInterceptor) Before(ctx context.Context, cc *a2asrv.CallContext, req *a2asrv.Request) (context.Context, any, error) {
	user, ok := ctx.Value(userKey{}).(string)
	if !ok {
		return ctx, nil, a2a.ErrUnauthenticated
	}
	cc.User = a2asrv.NewAuthenticatedUser(user, nil)
	if req == nil {
		return ctx, nil, nil
	}
	if sub, ok := req.Payload.(*a2a.SubscribeToTaskRequest); ok && sub != nil {
		if _, err := u.tasks.Get(ctx, sub.ID); err != nil {
			return ctx, nil, err
		}
	}
	return ctx, nil, nil
}

// taskOwner is the owner the task store records: the call's user, prefixed
// so the user "" (no tokens) owns tasks too.
func taskOwner(ctx context.Context) (string, error) {
	cc, ok := a2asrv.CallContextFrom(ctx)
	if !ok || cc.User == nil || !cc.User.Authenticated {
		return "", a2a.ErrUnauthenticated
	}
	return "user:" + cc.User.Name, nil
}
