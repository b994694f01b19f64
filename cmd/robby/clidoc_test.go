package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cliDocPath is the command's reference, from this package's directory.
const cliDocPath = "../../docs/CLI.md"

// TestCLIDoc: docs/CLI.md is what the command table says: every command,
// every flag with its default and help, every environment variable. A flag
// added, removed or changed fails it until the file is written again with
// go test ./cmd/robby -run TestCLIDoc -update-docs.
func TestCLIDoc(t *testing.T) {
	got := cliDoc()
	if *updateDocs {
		require.NoError(t, os.WriteFile(cliDocPath, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(cliDocPath)
	require.NoError(t, err)
	if got != string(want) {
		t.Errorf("docs/CLI.md is not what the command table says: run go test ./cmd/robby -run TestCLIDoc -update-docs\n%s",
			firstDifference(string(want), got))
	}
	for _, spec := range commands() {
		c, _ := newCommand(spec, nil, nil, nil)
		c.fs.VisitAll(func(f *flag.Flag) {
			assert.Contains(t, string(want), "`-"+f.Name, "robby %s -%s", spec.name, f.Name)
		})
	}
}

// firstDifference shows the first line where the file and the table differ.
func firstDifference(file, table string) string {
	a, b := strings.Split(file, "\n"), strings.Split(table, "\n")
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  file:  %s\n  table: %s", i+1, x, y)
		}
	}
	return ""
}

// cliDoc writes docs/CLI.md from the command table. The agent's flags,
// which six commands share, are listed once.
func cliDoc() string {
	var b strings.Builder
	b.WriteString(cliDocIntro)
	b.WriteString("| Command | What it does |\n|---|---|\n")
	for _, spec := range commands() {
		fmt.Fprintf(&b, "| [`robby %s`](#robby-%s) | %s |\n", spec.name, spec.name, cell(spec.summary))
	}
	agent := flag.NewFlagSet("agent", flag.ContinueOnError)
	var f agentFlags
	f.register(agent)
	b.WriteString("\n## Agent flags\n\nThe flags of every command that builds an agent: " +
		"`run`, `chat`, `serve`, `mcp`, `eval` and `worker`.\n\n")
	flagTable(&b, agent, nil)
	b.WriteString("\n" + envTable(agentEnv))
	for _, spec := range commands() {
		c, _ := newCommand(spec, nil, nil, nil)
		fmt.Fprintf(&b, "\n## robby %s\n\n```\n%s\n```\n\n%s\n", spec.name, spec.synopsis, strings.ReplaceAll(spec.about, "\n", " "))
		shared := hasAll(c.fs, agent)
		env := spec.env
		if shared {
			b.WriteString("\nIt takes the [agent flags](#agent-flags) and reads their environment, and these:\n")
			env = slices.DeleteFunc(slices.Clone(env), func(e string) bool { return slices.Contains(agentEnv, e) })
		}
		if !shared || hasOwn(c.fs, agent) {
			b.WriteString("\n")
			flagTable(&b, c.fs, agent)
		}
		if len(env) > 0 {
			b.WriteString("\n" + envTable(env))
		}
	}
	return b.String()
}

const cliDocIntro = `# The robby command

<!-- Written by go test ./cmd/robby -run TestCLIDoc -update-docs from the command table in cmd/robby: edit the
table, not this file. The test fails while the two differ. -->

Every command, flag and environment variable of ` + "`robby`" + `, as ` + "`robby help COMMAND`" + ` prints them.
Install it with ` + "`go install github.com/robby-go/robby/cmd/robby@latest`" + `, or run it from a checkout
with ` + "`go run ./cmd/robby`" + `.

- Flags go before or after the arguments: ` + "`robby run \"hi\" -model m`" + ` is ` + "`robby run -model m \"hi\"`" + `.
  After ` + "`--`" + ` all are arguments, for a prompt that starts with a dash.
- A flag whose help says "(env NAME)" takes NAME's value when it is not on the command line. The help shows
  the built-in default, never the variable's value.
- A file a flag reads must exist, unless its help says it is made if missing.
- Exit status: 0 when it went well, 1 when it failed (the error on stderr says what to do), 2 for a bad
  command line.

`

// flagTable writes the flags of fs, but those of skip, as a Markdown table.
func flagTable(b *strings.Builder, fs, skip *flag.FlagSet) {
	b.WriteString("| Flag | Default | What it does |\n|---|---|---|\n")
	fs.VisitAll(func(f *flag.Flag) {
		if skip != nil && sameFlag(skip.Lookup(f.Name), f) {
			return
		}
		name, usage := flag.UnquoteUsage(f)
		def := ""
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
			def = "`" + f.DefValue + "`"
		}
		fmt.Fprintf(b, "| `-%s` | %s | %s |\n", strings.TrimSpace(f.Name+" "+name), def, cell(usage))
	})
}

// envTable writes the environment variables env ("NAME\twhat") as a table.
func envTable(env []string) string {
	var b strings.Builder
	b.WriteString("| Variable | What it does |\n|---|---|\n")
	for _, e := range env {
		name, what, _ := strings.Cut(e, "\t")
		fmt.Fprintf(&b, "| `%s` | %s |\n", name, cell(what))
	}
	return b.String()
}

func sameFlag(a, b *flag.Flag) bool {
	return a != nil && b != nil && a.Usage == b.Usage && a.DefValue == b.DefValue
}

// hasAll reports whether fs has each flag of agent, the same.
func hasAll(fs, agent *flag.FlagSet) bool {
	all := true
	agent.VisitAll(func(f *flag.Flag) { all = all && sameFlag(fs.Lookup(f.Name), f) })
	return all
}

// hasOwn reports whether fs has a flag that agent does not.
func hasOwn(fs, agent *flag.FlagSet) bool {
	own := false
	fs.VisitAll(func(f *flag.Flag) { own = own || !sameFlag(agent.Lookup(f.Name), f) })
	return own
}

// cell is text in a Markdown table's cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}
