package team

import (
	"errors"
	"slices"

	"github.com/robby-go/robby"
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
// starts its own sessions of the servers it names.
func (f *File) Build(base []robby.Option, servers []robby.MCPServer) (*Team, error) {
	byName := make(map[string]robby.MCPServer, len(servers))
	for _, s := range servers {
		byName[s.Name()] = s
	}
	order, err := f.toolOrder()
	if err != nil {
		return nil, err
	}
	t := &Team{}
	built := map[string]*robby.Agent{}
	var members []*robby.Agent
	order = append(slices.DeleteFunc(order, func(n string) bool { return n == f.Root }), f.Root) // the root needs the others
	for _, name := range order {
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
		t.agents, built[name] = append(t.agents, a), a
		if name != f.Root {
			members = append(members, a)
		}
	}
	t.Root = built[f.Root]
	return t, nil
}

// options returns the options of agent name, over the defaults.
func (f *File) options(name string, servers map[string]robby.MCPServer, built map[string]*robby.Agent) ([]robby.Option, error) {
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
		opts = append(opts, robby.WithTools(built[t].AsTool(t, f.Agents[t].Description)))
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
