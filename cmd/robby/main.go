// Command robby runs an agent from the command line, with the tools of MCP
// servers, against any OpenAI-compatible endpoint. It also serves the agent:
// over HTTP as a chat page and OpenAI-compatible, UI message stream and AG-UI
// endpoints (robby serve), as an MCP server (robby mcp), and to durable runs
// on Temporal (robby worker).
//
//	go install github.com/robby-go/robby/cmd/robby@latest
//	robby help
//
// 'robby help' lists the commands. 'robby help COMMAND', the same as
// 'robby COMMAND -h', prints what a command does, its flags and the
// environment variables it reads. docs/CLI.md gathers them all, generated
// from the same command table.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(exitCode(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr), os.Stderr))
}

// exitCode reports err, if it was not shown already, and returns the process's
// exit status. That is 2 for a misused command line, 1 for a failure.
func exitCode(err error, stderr io.Writer) int {
	var shown shownError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &shown):
		return 1
	case errors.Is(err, flag.ErrHelp):
		return 2
	}
	report(stderr, err)
	var usageErr usageError
	if errors.As(err, &usageErr) {
		return 2
	}
	return 1
}

// report prints err with "robby: " in front, unless an error the library
// made begins it: then the prefix is there already.
func report(w io.Writer, err error) {
	msg := err.Error()
	if !strings.HasPrefix(msg, "robby: ") {
		msg = "robby: " + msg
	}
	fmt.Fprintln(w, msg)
}

// shownError is an error the user has seen already: it only sets the exit
// status.
type shownError struct{ error }

// usageError is a command line that does not parse.
type usageError struct{ error }

// commands is robby's command table, in the order usage lists them.
func commands() []*commandSpec {
	return []*commandSpec{&runCommand, &chatCommand, &serveCommand, &mcpCommand, &indexCommand, &evalCommand,
		&workerCommand, &versionCommand, helpCommand()}
}

// lookup returns the command named name, or nil.
func lookup(name string) *commandSpec {
	for _, spec := range commands() {
		if spec.name == name {
			return spec
		}
	}
	return nil
}

// printUsage prints robby's usage: what it does and its commands.
func printUsage(w io.Writer) {
	fmt.Fprint(w, "Robby runs an agent, with the tools of MCP servers, against any OpenAI-compatible endpoint.\n\n"+
		"usage: robby <command> [flags] [arguments]\n\nCommands:\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, spec := range commands() {
		fmt.Fprintf(tw, "  %s\t%s\n", spec.name, spec.summary)
	}
	tw.Flush()
	fmt.Fprint(w, "\nRun 'robby help <command>' (or 'robby <command> -h') for a command's flags and environment variables.\n")
}

// run dispatches to a subcommand; it is main without the process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		printUsage(stderr)
		return flag.ErrHelp
	}
	if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		printUsage(stdout)
		return nil
	}
	spec := lookup(args[0])
	if spec == nil {
		printUsage(stderr)
		return usageError{fmt.Errorf("unknown command %q: run 'robby help' for the list", args[0])}
	}
	c, runCmd := newCommand(spec, stdin, stdout, stderr)
	err := c.parse(args[1:])
	if err == nil {
		err = runCmd(ctx)
	}
	if errors.Is(err, errHelpShown) {
		return nil
	}
	return err
}

// helpCommand is robby help: the table's help, or a command's.
func helpCommand() *commandSpec {
	return &commandSpec{name: "help", synopsis: "robby help [command]", takesArgs: true,
		summary: "print the list of commands, or a command's help (the same as robby COMMAND -h)",
		about:   "Prints the list of commands or, given one, the command's help: what it does, its flags and the\nenvironment variables it reads. 'robby help run' prints what 'robby run -h' prints.",
		setup: func(c *command) func(context.Context) error {
			return func(context.Context) error {
				switch len(c.args) {
				case 0:
					printUsage(c.stdout)
					return nil
				case 1:
				default:
					c.usage(c.stderr)
					return usageError{errors.New("help takes one command")}
				}
				spec := lookup(c.args[0])
				if spec == nil {
					printUsage(c.stderr)
					return usageError{fmt.Errorf("unknown command %q", c.args[0])}
				}
				cmd, _ := newCommand(spec, c.stdin, c.stdout, c.stderr)
				cmd.usage(c.stdout)
				return nil
			}
		}}
}
