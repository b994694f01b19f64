package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/robby-go/robby"
)

// maxSuggestions bounds the completions shown for an argument.
const maxSuggestions = 10

// promptCommands are the MCP servers' prompts, offered in chat as /name
// commands. /name value... or /name arg=value... fills the prompt's arguments.
// It asks for the required ones left out, with the server's completions. The
// prompt's messages then go to the model.
type promptCommands struct {
	agent  *robby.Agent
	byName map[string]robby.MCPPromptInfo
	names  []string // sorted
}

// loadPromptCommands lists the servers' prompts. A prompt whose name
// another server's took is /server/name.
func loadPromptCommands(ctx context.Context, agent *robby.Agent, stderr io.Writer) *promptCommands {
	pc := &promptCommands{agent: agent, byName: map[string]robby.MCPPromptInfo{}}
	prompts, err := agent.MCPPrompts(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "robby: listing MCP prompts:", err)
	}
	for _, p := range prompts {
		name := p.Name
		if _, taken := pc.byName[name]; taken {
			name = p.Server + "/" + p.Name
		}
		pc.byName[name] = p
		pc.names = append(pc.names, name)
	}
	slices.Sort(pc.names)
	return pc
}

// help lists the commands.
func (pc *promptCommands) help(w io.Writer) {
	if len(pc.names) == 0 {
		fmt.Fprintln(w, "No MCP prompts: no server of -mcp offers any.")
		return
	}
	fmt.Fprintln(w, "MCP prompts (/name value... or /name arg=value...; type the start of a value and ? for completions):")
	for _, name := range pc.names {
		p := pc.byName[name]
		fmt.Fprintf(w, "  /%s", name)
		for _, a := range p.Arguments {
			if a.Required {
				fmt.Fprintf(w, " %s", a.Name)
			} else {
				fmt.Fprintf(w, " [%s]", a.Name)
			}
		}
		if p.Description != "" {
			fmt.Fprintf(w, " — %s", p.Description)
		}
		fmt.Fprintf(w, " (%s)\n", p.Server)
	}
}

// errCancelled ends a command whose argument the user left empty.
var errCancelled = errors.New("cancelled")

// run runs the command line (without its slash). It fills the prompt's
// arguments, then has the model answer the prompt's messages, with opts.
func (pc *promptCommands) run(ctx context.Context, line string, in *bufio.Scanner, out *screen, opts ...robby.RunOption) error {
	stderr := out.stderr
	name, rest, _ := strings.Cut(line, " ")
	p, ok := pc.byName[name]
	if !ok {
		return fmt.Errorf("no command or prompt /%s: /help lists them", name)
	}
	args, err := pc.arguments(ctx, p, strings.Fields(rest), in, stderr)
	if err != nil {
		return err
	}
	msgs, err := pc.agent.MCPPrompt(ctx, p.Server, p.Name, args)
	if err != nil {
		return err
	}
	pc.agent.AddMessages(msgs...)
	return out.show(pc.agent.ResumeStream(ctx, opts...))
}

// arguments fills the prompt's arguments from the command's words, then
// asks for the required ones missing.
func (pc *promptCommands) arguments(ctx context.Context, p robby.MCPPromptInfo, words []string, in *bufio.Scanner, stderr io.Writer) (map[string]string, error) {
	args := map[string]string{}
	next := 0 // the next argument a bare word fills
	for _, w := range words {
		if k, v, ok := strings.Cut(w, "="); ok && slices.ContainsFunc(p.Arguments, func(a *mcp.PromptArgument) bool { return a.Name == k }) {
			args[k] = v
			continue
		}
		for next < len(p.Arguments) && args[p.Arguments[next].Name] != "" {
			next++
		}
		if next == len(p.Arguments) {
			return nil, fmt.Errorf("/%s takes %d arguments", p.Name, len(p.Arguments))
		}
		args[p.Arguments[next].Name] = w
	}
	for _, a := range p.Arguments {
		if !a.Required || args[a.Name] != "" {
			continue
		}
		v, err := pc.ask(ctx, p, a, args, in, stderr)
		if err != nil {
			return nil, err
		}
		args[a.Name] = v
	}
	return args, nil
}

// ask reads one argument's value, offering the server's completions; a
// value ending in ? shows the completions of what precedes it.
func (pc *promptCommands) ask(ctx context.Context, p robby.MCPPromptInfo, a *mcp.PromptArgument, known map[string]string, in *bufio.Scanner, stderr io.Writer) (string, error) {
	prefix := ""
	for {
		label := a.Name
		if a.Description != "" {
			label += " (" + a.Description + ")"
		}
		values, err := pc.agent.CompleteMCPPrompt(ctx, p.Server, p.Name, a.Name, prefix, known)
		if err != nil {
			fmt.Fprintln(stderr, "robby:", err)
		}
		if len(values) > maxSuggestions {
			values = append(values[:maxSuggestions:maxSuggestions], "…")
		}
		if len(values) > 0 {
			label += " [" + strings.Join(values, ", ") + "]"
		}
		fmt.Fprintf(stderr, "%s: ", label)
		if !in.Scan() {
			return "", errCancelled
		}
		v := strings.TrimSpace(in.Text())
		if v == "" {
			return "", errCancelled
		}
		if p, ok := strings.CutSuffix(v, "?"); ok {
			prefix = p
			continue
		}
		return v, nil
	}
}
