package team

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/a2atool"
	"github.com/robby-go/robby/internal/envvar"
)

// A Team is a built team: its root, which runs it ([robby.WithTeam]), and
// its other agents. Close it to close them all.
type Team struct {
	Root   *robby.Agent
	agents []*robby.Agent // the root last
}

// Build builds the team's agents. Each gets base first, the defaults of the
// command (endpoint, -system, -model, limits), then the settings the file
// gives it. servers are those an agent's mcpServers may name: the agent
// starts its own sessions of the servers it names. A remote agent's card is
// read within ctx.
func (f *File) Build(ctx context.Context, base []robby.Option, servers []robby.MCPServer) (*Team, error) {
	byName := make(map[string]robby.MCPServer, len(servers))
	for _, s := range servers {
		byName[s.Name()] = s
	}
	order, err := f.toolOrder()
	if err != nil {
		return nil, err
	}
	t := &Team{}
	built := map[string]robby.Tool{} // each agent other than the root, as a tool
	var members []*robby.Agent
	order = append(slices.DeleteFunc(order, func(n string) bool { return n == f.Root }), f.Root) // the root needs the others
	for _, name := range order {
		if f.Agents[name].remote() {
			if built[name], err = f.remote(ctx, name); err != nil {
				return nil, errors.Join(err, t.Close())
			}
			continue
		}
		opts, err := f.options(name, byName, built)
		if err != nil {
			return nil, errors.Join(err, t.Close())
		}
		if name == f.Root {
			opts = append(opts, robby.WithTeam(members...))
		}
		a, err := robby.New(append(base[:len(base):len(base)], opts...)...)
		if err != nil {
			return nil, errors.Join(f.errorf(name, "agent", "%w", err), t.Close())
		}
		t.agents = append(t.agents, a)
		if name != f.Root {
			members, built[name] = append(members, a), a.AsTool(name, f.Agents[name].Description)
		}
	}
	t.Root = t.agents[len(t.agents)-1]
	return t, nil
}

// remote returns the tool that calls remote agent name over A2A.
func (f *File) remote(ctx context.Context, name string) (robby.Tool, error) {
	a := f.Agents[name]
	opts := []a2atool.Option{a2atool.WithName(name), a2atool.WithDescription(a.Description)}
	var secrets []string
	for _, h := range slices.Sorted(maps.Keys(a.Headers)) {
		v, err := envvar.Expand(a.Headers[h], &secrets)
		if err != nil {
			return robby.Tool{}, f.errorf(name, "headers", "%s: %w", h, err)
		}
		opts = append(opts, a2atool.WithHeader(h, v))
	}
	tool, err := a2atool.New(ctx, a.A2A, opts...)
	if err != nil {
		return robby.Tool{}, f.errorf(name, "a2a", "%w", err)
	}
	return tool, nil
}

// options returns the options of agent name, over the defaults.
func (f *File) options(name string, servers map[string]robby.MCPServer, built map[string]robby.Tool) ([]robby.Option, error) {
	a := f.Agents[name]
	opts := []robby.Option{robby.WithName(name), robby.WithDescription(a.Description)}
	if a.Instructions != "" {
		opts = append(opts, robby.WithSystem(a.Instructions))
	}
	if a.Model != "" {
		opts = append(opts, robby.WithModel(a.Model))
	}
	if a.MaxTurns > 0 {
		opts = append(opts, robby.WithMaxTurns(a.MaxTurns))
	}
	if a.ReturnToRoot {
		opts = append(opts, robby.WithReturnToRoot())
	}
	var mcp []robby.MCPServer
	for _, s := range a.MCPServers {
		srv, ok := servers[s]
		if !ok {
			return nil, f.errorf(name, "mcpServers", "%w %q (give the mcpServers file that has it with -mcp)", ErrNoServer, s)
		}
		mcp = append(mcp, srv)
	}
	if len(mcp) > 0 {
		opts = append(opts, robby.WithMCP(mcp...))
	}
	for _, t := range a.AgentTools {
		opts = append(opts, robby.WithTools(built[t]))
	}
	handoffs := make([]robby.Handoff, len(a.Handoffs))
	for i, h := range a.Handoffs {
		handoffs[i] = robby.Handoff{To: h.To, History: histories[h.History]}
	}
	return append(opts, robby.WithHandoffs(handoffs...)), nil
}

// Agents returns the team's agents, the root last.
func (t *Team) Agents() []*robby.Agent { return slices.Clone(t.agents) }

// Close closes every agent of the team, the root last.
func (t *Team) Close() error {
	var errs []error
	for _, a := range t.agents {
		errs = append(errs, a.Close())
	}
	return errors.Join(errs...)
}
