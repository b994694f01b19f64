package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A config is one load run's settings; see the flags of main.
type config struct {
	Users, Turns, Chunks int
	Latency, Ramp        time.Duration
	APIs                 []string
	Store                string
	Dir                  string
	Floor                bool
	Robby                string
	Race                 bool
	Limits               bool // robby counts each user's requests and tokens, with limits it never reaches
	Profile              string
	ProfileSeconds       int
	Log                  io.Writer
}

// A result is what one target did under the load.
type result struct {
	Name               string
	Users, Requests    int
	Errors             []error
	Wall               time.Duration
	Added              []time.Duration // sorted
	RSSBase, RSSPeak   int64           // bytes; 0 for the floor
	CPU                time.Duration   // robby's, user and system, over the run; 0 for the floor
	GoStart, GoEnd     int             // robby's goroutines before and after; 0 for the floor
	Sent, Stored       int             // user messages; Stored is -1 when none are kept
	StoreErr           error
	robby, storedCheck bool
}

// check returns the result's failure: an error, a goroutine left, or a store
// that holds other than what was sent.
func (r *result) check() error {
	switch {
	case len(r.Errors) > 0:
		return fmt.Errorf("%s: %d errors, the first: %w", r.Name, len(r.Errors), r.Errors[0])
	case r.robby && r.GoEnd > r.GoStart:
		return fmt.Errorf("%s: %d goroutines after the run, %d before", r.Name, r.GoEnd, r.GoStart)
	case r.StoreErr != nil:
		return fmt.Errorf("%s: the store: %w", r.Name, r.StoreErr)
	case r.storedCheck && r.Stored != r.Sent:
		return fmt.Errorf("%s: %d user messages stored, %d sent", r.Name, r.Stored, r.Sent)
	}
	return nil
}

// quantile returns the q-quantile of sorted durations.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// run runs the load against robby over each API, then against the floor.
func run(ctx context.Context, cfg config) ([]*result, error) {
	if cfg.Users < 1 || cfg.Turns < 1 || cfg.Chunks < 2 || cfg.Latency <= 0 {
		return nil, errors.New("-users and -turns must be at least 1, -chunks at least 2, -latency positive")
	}
	dir := cfg.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "robby-load")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	if cfg.Robby == "" {
		cfg.Robby = filepath.Join(dir, "robby")
		fmt.Fprintln(cfg.Log, "load: building robby")
		if err := buildRobby(ctx, ".", cfg.Robby, cfg.Race); err != nil {
			return nil, err
		}
	}
	m := newModel(cfg.Chunks, cfg.Latency)
	modelSrv, err := serveLocal(m)
	if err != nil {
		return nil, err
	}
	defer modelSrv.Close()
	tools, err := serveLocal(lookupServer())
	if err != nil {
		return nil, err
	}
	defer tools.Close()
	env := &environment{cfg: cfg, dir: dir, model: m, modelSrv: modelSrv, tools: tools}
	var results []*result
	for _, api := range cfg.APIs {
		if api != apiResponses && api != apiChat {
			return results, fmt.Errorf("-api %q: give responses, chat, or both", api)
		}
		r, err := env.robby(ctx, api)
		if err != nil {
			return results, fmt.Errorf("robby over %s: %w", api, err)
		}
		results = append(results, r)
	}
	if cfg.Floor {
		r, err := env.floor(ctx)
		if err != nil {
			return results, fmt.Errorf("floor: %w", err)
		}
		results = append(results, r)
	}
	return results, nil
}

// An environment is what every target of a run shares: the model and the
// tool's server.
type environment struct {
	cfg             config
	dir             string
	model           *model
	modelSrv, tools *local
}

func (e *environment) driver(api, base, prefix string) (*driver, *http.Client) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = e.cfg.Users + 1
	client := &http.Client{Transport: tr}
	return &driver{api: api, base: base, turns: e.cfg.Turns, words: e.cfg.Chunks, model: e.model, client: client, prefix: prefix}, client
}

// robby loads a robby serve of its own over api.
func (e *environment) robby(ctx context.Context, api string) (*result, error) {
	prefix := fmt.Sprintf("load%d", time.Now().UnixNano())
	args, store, err := e.robbyArgs(api, prefix)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(e.cfg.Log, "load: robby over %s, store %s, %d users\n", api, storeLabel(store), e.cfg.Users)
	p, err := startRobby(e.cfg.Robby, args...)
	if err != nil {
		return nil, err
	}
	defer p.kill()
	d, client := e.driver(api, p.URL, prefix)
	// A first conversation, by an extra user, starts what starts lazily.
	if turns := d.run(ctx, e.cfg.Users); turns[len(turns)-1].err != nil {
		return nil, fmt.Errorf("the first conversation: %w", turns[len(turns)-1].err)
	}
	name := fmt.Sprintf("robby %s, store %s", api, storeLabel(store))
	if e.cfg.Limits {
		name += ", limits"
	}
	r := &result{Name: name, Users: e.cfg.Users, robby: true, Stored: -1}
	e.settle(client)
	if r.GoStart, err = p.goroutines(ctx); err != nil {
		return nil, err
	}
	if r.RSSBase, err = p.rss(); err != nil {
		return nil, err
	}
	peak := sampleRSS(p)
	var profiles func() error
	if e.cfg.Profile != "" {
		profiles = p.saveProfiles(ctx, filepath.Join(e.cfg.Profile, api), e.cfg.ProfileSeconds)
	}
	cpuStart, err := p.cpu()
	if err != nil {
		return nil, err
	}
	turns, wall := d.drive(ctx, e.cfg.Users, e.cfg.Ramp)
	r.RSSPeak = peak()
	cpuEnd, err := p.cpu()
	if err != nil {
		return nil, err
	}
	r.CPU = cpuEnd - cpuStart
	r.tally(turns, wall)
	if profiles != nil {
		if err := profiles(); err != nil {
			return nil, err
		}
	}
	r.GoEnd = p.settledGoroutines(ctx, r.GoStart, func() { e.settle(client) })
	if err := p.stop(); err != nil {
		return nil, err
	}
	if api == apiResponses && store != "" {
		r.storedCheck = true
		r.Stored, r.StoreErr = checkStore(ctx, store, prefix, turns, e.cfg.Users, e.cfg.Turns)
	}
	return r, nil
}

// robbyArgs returns robby serve's flags for a run, and its store.
func (e *environment) robbyArgs(api, prefix string) ([]string, string, error) {
	dir, err := os.MkdirTemp(e.dir, api)
	if err != nil {
		return nil, "", err
	}
	var tokens strings.Builder
	for u := range e.cfg.Users + 1 {
		fmt.Fprintf(&tokens, "%s:%s\n", userName(prefix, u), userToken(prefix, u))
	}
	mcpConfig, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"load": map[string]any{"url": e.tools.URL}}})
	if err := errors.Join(os.WriteFile(filepath.Join(dir, "tokens"), []byte(tokens.String()), 0o600),
		os.WriteFile(filepath.Join(dir, "mcp.json"), mcpConfig, 0o600)); err != nil {
		return nil, "", err
	}
	args := []string{"-base-url", e.modelSrv.URL + "/v1", "-model", "load", "-mcp", filepath.Join(dir, "mcp.json"),
		"-token-file", filepath.Join(dir, "tokens"), "-context", "1000000", "-drain", "10s"}
	store := e.cfg.Store
	switch {
	case store == "none":
		store = ""
	case store == "sqlite":
		store = filepath.Join(dir, "load.db")
	case !strings.HasPrefix(store, "postgres://") && !strings.HasPrefix(store, "postgresql://"):
		return nil, "", fmt.Errorf("-store %q: give sqlite, none or a postgres:// URL", store)
	}
	if store != "" {
		args = append(args, "-store", store)
	}
	if e.cfg.Limits {
		args = append(args, "-limit-rpm", "1000000", "-limit-tokens-day", "1000000000000")
	}
	return args, store, nil
}

// storeLabel names a store without its URL's user or password.
func storeLabel(store string) string {
	switch {
	case store == "":
		return "none"
	case strings.HasPrefix(store, "postgres"):
		return "postgres"
	}
	return "sqlite"
}

// floor loads the model through a reverse proxy.
func (e *environment) floor(ctx context.Context) (*result, error) {
	fmt.Fprintf(e.cfg.Log, "load: floor, %d users\n", e.cfg.Users)
	proxy, err := floorProxy(e.modelSrv.URL)
	if err != nil {
		return nil, err
	}
	srv, err := serveLocal(proxy)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	d, client := e.driver(apiFloor, srv.URL+"/v1", "floor")
	defer client.CloseIdleConnections()
	mc := mcp.NewClient(&mcp.Implementation{Name: "floor", Version: "v1"}, nil)
	if d.tools, err = mc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.tools.URL, HTTPClient: client}, nil); err != nil {
		return nil, fmt.Errorf("connecting to the lookup server: %w", err)
	}
	defer d.tools.Close()
	r := &result{Name: "floor: httputil.ReverseProxy", Users: e.cfg.Users, Stored: -1}
	turns, wall := d.drive(ctx, e.cfg.Users, e.cfg.Ramp)
	r.tally(turns, wall)
	return r, nil
}

// settle closes the idle connections to and from robby, whose goroutines
// then end.
func (e *environment) settle(client *http.Client) {
	client.CloseIdleConnections()
	e.modelSrv.closeIdle()
	e.tools.closeIdle()
}

// tally adds the turns' figures to r.
func (r *result) tally(turns []turn, wall time.Duration) {
	r.Wall = wall
	for _, t := range turns {
		r.Requests++
		if t.err != nil {
			r.Errors = append(r.Errors, t.err)
			continue
		}
		r.Added = append(r.Added, t.took-t.model)
	}
	r.Sent = len(turns) // a prompt each
	slices.Sort(r.Added)
}

// sampleRSS samples p's resident memory every 20 ms until the returned
// function is called, which returns the peak.
func sampleRSS(p *robbyProc) (peak func() int64) {
	var mu sync.Mutex
	var top int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss, err := p.rss(); err == nil {
				mu.Lock()
				top = max(top, rss)
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return top
	}
}

// settledGoroutines waits up to 10 s for robby's goroutines to come back to
// start, and returns the last count. It calls settle before each look: a
// connection that went back to the client's pool just after the last
// CloseIdleConnections would hold two of robby's goroutines until its idle
// timeout.
func (p *robbyProc) settledGoroutines(ctx context.Context, start int, settle func()) int {
	deadline := time.Now().Add(10 * time.Second)
	for {
		settle()
		n, err := p.goroutines(ctx)
		if err != nil || n <= start || time.Now().After(deadline) {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
}
