// Package team reads a team of agents that hand a conversation over to one
// another from one file, JSON or YAML, and builds it ([robby.WithTeam]):
//
//	{"root": "triage",
//	 "agents": {
//	   "triage":  {"description": "Routes the user", "instructions": "…", "handoffs": ["billing"]},
//	   "billing": {"description": "Refunds and invoices", "instructions": "…", "model": "…",
//	               "mcpServers": ["payments"], "handoffs": [{"to": "triage", "history": "none"}],
//	               "returnToRoot": false}}}
//
// An agent's mcpServers name servers of an mcpServers file (package
// mcpconfig): the agent gets those servers' tools only. Its agentTools name
// agents it calls as tools ([robby.Agent.AsTool]): it keeps control. A handoff
// names its target, alone or with the history it hands over: "all" (the
// default), "summary" or "none" ([robby.HandoffHistory]). Errors name the
// file, the agent and the field.
//
// An agent may be remote, served over A2A elsewhere: {"a2a": URL,
// "headers": {"Authorization": "Bearer ${PRICING_TOKEN}"}} (package
// a2atool). The agents whose agentTools name it call it as a tool. It is no
// root and no handoff's target, since it runs elsewhere. Its headers' ${VAR}
// take the environment's values, which never appear in errors.
package team

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/robby-go/robby"
)

// A File is a team as its file gives it.
type File struct {
	// Root names the agent that starts each conversation.
	Root string `yaml:"root"`
	// Agents are the team's agents, by name ([robby.WithName]).
	Agents map[string]Agent `yaml:"agents"`

	path string // where it was read, for errors
}

// An Agent is one agent of a [File]. A field left out keeps the default
// that [Build] is given (the command's -system, -model and limits).
type Agent struct {
	Description  string    `yaml:"description"`  // robby.WithDescription
	Instructions string    `yaml:"instructions"` // its system prompt
	Model        string    `yaml:"model"`
	MaxTurns     int       `yaml:"maxTurns"`
	MCPServers   []string  `yaml:"mcpServers"` // servers of the mcpServers file it uses
	AgentTools   []string  `yaml:"agentTools"` // agents it calls as tools
	Handoffs     []Handoff `yaml:"handoffs"`
	ReturnToRoot bool      `yaml:"returnToRoot"` // robby.WithReturnToRoot

	// A2A is the URL of a remote agent served over A2A; its description,
	// if left out, is its card's.
	A2A     string            `yaml:"a2a"`
	Headers map[string]string `yaml:"headers"` // of the requests to an A2A agent, ${VAR} expanded
}

// remote reports an agent served elsewhere, over A2A.
func (a Agent) remote() bool { return a.A2A != "" }

// checkRemote refuses what a remote agent cannot have, or headers without
// an A2A agent to send them to. It returns the field at fault.
func (a Agent) checkRemote() (field string, err error) {
	if !a.remote() {
		if len(a.Headers) > 0 {
			return "headers", errors.New("headers are for a remote agent: give its a2a URL")
		}
		return "", nil
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"instructions", a.Instructions != ""}, {"model", a.Model != ""}, {"maxTurns", a.MaxTurns != 0},
		{"mcpServers", len(a.MCPServers) > 0}, {"agentTools", len(a.AgentTools) > 0}, {"handoffs", len(a.Handoffs) > 0},
		{"returnToRoot", a.ReturnToRoot}} {
		if f.set {
			return f.name, errors.New("a remote agent (a2a) runs elsewhere: it has none")
		}
	}
	return "", nil
}

// A Handoff names an agent the agent may hand the conversation over to, and
// the history it hands over. In the file it is the name alone, or an object
// {"to": name, "history": "all", "summary" or "none"}.
type Handoff struct {
	To      string `yaml:"to"`
	History string `yaml:"history"`
}

// UnmarshalYAML reads a handoff given as a name or as an object.
func (h *Handoff) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&h.To)
	}
	type plain Handoff
	dec := (*plain)(h)
	return n.Decode(dec)
}

var histories = map[string]robby.HandoffHistory{"": robby.HistoryAll, "all": robby.HistoryAll,
	"summary": robby.HistorySummary, "none": robby.HistoryNone}

// Load reads and checks the team file at path.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse reads and checks a team file's data. path names it in errors. JSON is
// read as the YAML it is. A field the format does not have is an error.
func Parse(path string, data []byte) (*File, error) {
	f := &File{path: path}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(f); err != nil {
		return nil, fmt.Errorf("team file %s: %w", path, err)
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return f, nil
}

// check refuses a team that could not be built: a root that is not an
// agent, a handoff or agent tool naming none, an unknown history, agents
// that call each other as tools in a circle.
func (f *File) check() error {
	switch {
	case len(f.Agents) == 0:
		return f.errorf("", "agents", "no agents")
	case f.Root == "":
		return f.errorf("", "root", "no root agent")
	case !f.has(f.Root):
		return f.errorf("", "root", "%q is not one of the agents", f.Root)
	}
	if f.Agents[f.Root].remote() {
		return f.errorf("", "root", "%q is a remote agent (a2a): the root runs here", f.Root)
	}
	for _, name := range f.names() {
		a := f.Agents[name]
		if field, err := a.checkRemote(); err != nil {
			return f.errorf(name, field, "%w", err)
		}
		for _, h := range a.Handoffs {
			switch _, ok := histories[h.History]; {
			case !f.has(h.To):
				return f.errorf(name, "handoffs", "%q is not one of the agents", h.To)
			case f.Agents[h.To].remote():
				return f.errorf(name, "handoffs", "%q is a remote agent (a2a), which runs elsewhere: call it as a tool (agentTools)", h.To)
			case h.To == name:
				return f.errorf(name, "handoffs", "a handoff to itself")
			case !ok:
				return f.errorf(name, "handoffs", "history %q of the handoff to %q: give all, summary or none", h.History, h.To)
			}
		}
		for _, t := range a.AgentTools {
			switch {
			case !f.has(t):
				return f.errorf(name, "agentTools", "%q is not one of the agents", t)
			case t == f.Root:
				return f.errorf(name, "agentTools", "%q is the root, which runs the team: it cannot be a tool", t)
			}
		}
		if a.MaxTurns < 0 {
			return f.errorf(name, "maxTurns", "%d is not a positive number of turns", a.MaxTurns)
		}
	}
	_, err := f.toolOrder()
	return err
}

func (f *File) has(name string) bool { _, ok := f.Agents[name]; return ok }

// names returns the agents' names, sorted: errors and builds are the same
// from run to run.
func (f *File) names() []string {
	names := make([]string, 0, len(f.Agents))
	for name := range f.Agents {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// toolOrder returns the agents in an order where each comes after the agents
// it calls as tools. Agents that call each other in a circle are an error.
func (f *File) toolOrder() ([]string, error) {
	var order []string
	state := map[string]int{} // 1 being placed, 2 placed
	var place func(name string, path []string) error
	place = func(name string, path []string) error {
		switch state[name] {
		case 1:
			return f.errorf(path[0], "agentTools", "agents call each other as tools in a circle: %v", append(path, name))
		case 2:
			return nil
		}
		state[name] = 1
		for _, t := range f.Agents[name].AgentTools {
			if err := place(t, append(path, name)); err != nil {
				return err
			}
		}
		state[name] = 2
		order = append(order, name)
		return nil
	}
	for _, name := range f.names() {
		if err := place(name, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// An Error is a mistake in a team file, naming where it is.
type Error struct {
	Path  string // the file
	Agent string // the agent, empty for the file's own fields
	Field string
	Err   error
}

func (e *Error) Error() string {
	if e.Agent == "" {
		return fmt.Sprintf("team file %s: %s: %v", e.Path, e.Field, e.Err)
	}
	return fmt.Sprintf("team file %s: agent %q: %s: %v", e.Path, e.Agent, e.Field, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

func (f *File) errorf(agent, field, format string, args ...any) error {
	return &Error{Path: f.path, Agent: agent, Field: field, Err: fmt.Errorf(format, args...)}
}

// ErrNoServer is what an agent's mcpServers naming a server that the
// mcpServers file does not have wraps.
var ErrNoServer = errors.New("team: no such MCP server")
