package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
)

// A commandSpec is one entry of robby's command table, which usage, help
// and dispatch read.
type commandSpec struct {
	name      string
	synopsis  string   // the usage line after "usage: "
	summary   string   // what it does, in a line, for robby's usage
	about     string   // what it does, for its help
	env       []string // the environment variables it reads: "NAME\twhat"
	takesArgs bool     // whether it takes arguments besides its flags
	// setup registers the command's flags and returns the function that
	// runs it, once they are parsed.
	setup func(c *command) func(ctx context.Context) error
}

// A command is one run of a subcommand: its flags, its arguments and its
// standard streams.
type command struct {
	*commandSpec
	fs             *flag.FlagSet
	args           []string // the arguments besides the flags, once parsed
	stdin          io.Reader
	stdout, stderr io.Writer
}

// The environment variables the commands read, as their help lists them.
var (
	endpointEnv = []string{
		"OPENAI_BASE_URL\tthe endpoint, when -base-url is not given (default " + defaultBaseURL + ")",
		"OPENAI_API_KEY\tthe API key, when -api-key is not given",
	}
	embeddingsEnv = []string{
		"ROBBY_EMBEDDINGS_MODEL\tthe embedding model, when -embed-model is not given",
		"ROBBY_EMBEDDINGS_URL\tthe embeddings endpoint, when -embed-url is not given",
	}
	// agentEnv are the variables of the commands that build an agent.
	agentEnv = slices.Concat(endpointEnv, []string{
		"ROBBY_MODEL\tthe model, when -model is not given (default " + defaultModel + ")",
		"OPENAI_ORG_ID, OPENAI_PROJECT_ID, OPENAI_CUSTOM_HEADERS\tsent with each request by openai-go",
		"${NAME} in the -mcp file\tany variable the file names, for its servers",
		"${NAME} in the -guards file\tany variable its judges' base_url and api_key name",
	}, oauthEnv, embeddingsEnv, otelEnv)
)

// newCommand sets spec up for one run: it registers the flags and returns
// the command and the function that runs it.
func newCommand(spec *commandSpec, stdin io.Reader, stdout, stderr io.Writer) (*command, func(context.Context) error) {
	fs := flag.NewFlagSet(spec.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned, help printed by usage
	fs.Usage = func() {}
	c := &command{commandSpec: spec, fs: fs, stdin: stdin, stdout: stdout, stderr: stderr}
	return c, spec.setup(c)
}

// errHelpShown ends a command whose help was asked for and printed.
var errHelpShown = errors.New("help shown")

// parse parses args: flags before and after the arguments, as in
// robby run "hi" -model m; after "--", all are arguments. -h prints the help
// to stdout and returns errHelpShown; a bad flag prints it to stderr and
// returns a usageError.
func (c *command) parse(args []string) error {
	for {
		err := c.fs.Parse(args)
		switch {
		case errors.Is(err, flag.ErrHelp):
			c.usage(c.stdout)
			return errHelpShown
		case err != nil:
			c.usage(c.stderr)
			if c.takesArgs && strings.HasPrefix(err.Error(), "flag provided but not defined") {
				err = fmt.Errorf("%w (an argument that starts with - goes after --)", err)
			}
			return usageError{err}
		}
		rest := c.fs.Args()
		if len(rest) == 0 {
			break
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			c.args = append(c.args, rest...)
			break
		}
		c.args, args = append(c.args, rest[0]), rest[1:]
	}
	if len(c.args) > 0 && !c.takesArgs {
		c.usage(c.stderr)
		return usageError{fmt.Errorf("robby %s takes no arguments besides its flags, not %q", c.name, c.args[0])}
	}
	return c.fromEnv()
}

// envInUsage finds the variable a flag's help names as "(env NAME)".
var envInUsage = regexp.MustCompile(`\(env ([A-Z][A-Z0-9_]*)\)`)

// fromEnv sets each flag not given on the command line whose help says
// "(env NAME)" from NAME, when it is set. The help shows the built-in
// default, never the environment's value, which may be a secret.
func (c *command) fromEnv() error {
	given := map[string]bool{}
	c.fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	c.fs.VisitAll(func(f *flag.Flag) {
		m := envInUsage.FindStringSubmatch(f.Usage)
		if m == nil || given[f.Name] || err != nil {
			return
		}
		if v, ok := os.LookupEnv(m[1]); ok && v != "" {
			if e := c.fs.Set(f.Name, v); e != nil {
				err = usageError{fmt.Errorf("%s, for -%s: %v", m[1], f.Name, e)}
			}
		}
	})
	return err
}

// usage prints the command's help: its usage line, what it does, its
// flags and the environment variables it reads.
func (c *command) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n\nFlags:\n", c.synopsis, c.about)
	c.fs.SetOutput(w)
	c.fs.PrintDefaults()
	c.fs.SetOutput(io.Discard)
	if len(c.env) == 0 {
		return
	}
	fmt.Fprintln(w, "\nEnvironment:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, e := range c.env {
		fmt.Fprintf(tw, "  %s\n", e)
	}
	tw.Flush()
}

// visited returns the first of names that the command line set, or "".
func visited(fs *flag.FlagSet, names ...string) string {
	set := ""
	fs.Visit(func(f *flag.Flag) {
		if set == "" && slices.Contains(names, f.Name) {
			set = f.Name
		}
	})
	return set
}
