package robby

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robby-go/robby/internal/schemas"
)

// toolbox holds an agent's tools, local and MCP, and the toolset offered
// now. MCP servers may change their tools during the agent's life.
type toolbox struct {
	local  []Tool
	hub    *mcpHub // nil without MCP servers
	policy *callPolicy

	mu      sync.Mutex // serializes rebuilds
	current atomic.Pointer[toolset]
}

func (b *toolbox) init(cfg *config) error {
	b.local = cfg.tools
	if cfg.portable {
		b.local = slices.Clone(cfg.tools)
		for i := range b.local {
			t := &b.local[i]
			if t.params == nil || t.err != nil {
				continue
			}
			p, err := schemas.Portable(t.params)
			if err != nil {
				return fmt.Errorf("tool %q: %w", t.name, err)
			}
			t.params, t.paramsJSON = p, nil
		}
	}
	b.policy = &callPolicy{limit: cfg.maxCalls, timeout: cfg.timeout, middleware: toolMiddleware(cfg), maxOutput: cfg.maxOutput, log: cfg.logger, tel: cfg.telemetry, guards: cfg.guards}
	if err := b.rebuild(); err != nil {
		return err
	}
	if len(cfg.mcp) == 0 {
		return nil
	}
	hub, err := connectMCP(cfg, b.current.Load().byName)
	if err != nil {
		return err
	}
	b.hub = hub
	return b.rebuild()
}

// rebuild makes the toolset of the local tools and the MCP tools known now.
func (b *toolbox) rebuild() error {
	tools := b.local
	if b.hub != nil {
		tools = append(slices.Clip(tools), b.hub.tools()...)
	}
	ts, err := newToolset(tools, b.policy)
	if err != nil {
		return err
	}
	b.current.Store(ts)
	return nil
}

// get returns the toolset to offer, after fetching the tools of the MCP
// servers that announced a change.
func (b *toolbox) get(ctx context.Context) *toolset {
	if b.hub == nil || !b.hub.changed.Load() {
		return b.current.Load()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hub.changed.Swap(false) {
		b.hub.refresh(ctx)
		if err := b.rebuild(); err != nil {
			b.policy.log.WarnContext(ctx, "robby: keeping the previous tools", slog.Any("error", err))
		}
	}
	return b.current.Load()
}

func (b *toolbox) close() error {
	if b.hub == nil {
		return nil
	}
	return b.hub.close()
}

// toolset is the immutable set of tools an agent offers, with the bounds
// their calls run within.
type toolset struct {
	*callPolicy
	byName map[string]*Tool
	names  []string          // sorted, deferred tools included
	raw    []json.RawMessage // the offered tools' definitions, encoded for the requests
	search *toolSearch       // the deferred tools; nil if none (toolsearch.go)
	found  map[string]bool   // the deferred tools a turn may call (withFound)
	all    bool              // every deferred tool may be called (programs)
}

// callPolicy is how an agent runs tool calls.
type callPolicy struct {
	limit      int              // calls run per turn
	timeout    time.Duration    // per turn's calls; 0 for none
	middleware []ToolMiddleware // approval first; nil for none
	maxOutput  int              // bytes of a tool's output the model reads
	log        *slog.Logger
	tel        *telemetry
	guards     *guardSet // nil for none
}

func newToolset(tools []Tool, policy *callPolicy) (*toolset, error) {
	ts := &toolset{callPolicy: policy, byName: make(map[string]*Tool, len(tools)), raw: make([]json.RawMessage, 0, len(tools))}
	for i := range tools {
		t := &tools[i]
		switch {
		case !validName(t.name):
			return nil, fmt.Errorf("robby: tool %q: name must match ^[a-zA-Z0-9_-]{1,64}$", t.name)
		case t.err != nil:
			return nil, fmt.Errorf("tool %q: %w", t.name, t.err)
		case t.bind == nil:
			return nil, fmt.Errorf("robby: tool %q: not built with NewTool or FuncTool", t.name)
		case ts.byName[t.name] != nil:
			return nil, fmt.Errorf("robby: tool %q: duplicate name", t.name)
		}
		ts.byName[t.name] = t
		ts.names = append(ts.names, t.name)
		if t.deferred {
			continue // encoded when a search finds it
		}
		raw, err := t.definition()
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", t.name, err)
		}
		ts.raw = append(ts.raw, raw)
	}
	slices.Sort(ts.names)
	return ts, ts.addSearch()
}

// destructive reports whether the tool of that name is [Tool.Destructive].
func (ts *toolset) destructive(name string) bool {
	if ts == nil {
		return false
	}
	t := ts.byName[name]
	return t != nil && t.destructive
}

// rerunnable reports whether every call names a tool that is
// [Tool.Idempotent]: one that may run before its call is stored, as a crash
// would have it run again.
func (ts *toolset) rerunnable(calls []ToolCall) bool {
	if ts == nil {
		return false
	}
	for _, c := range calls {
		if t := ts.byName[c.Name]; t == nil || !t.idempotent {
			return false
		}
	}
	return true
}
