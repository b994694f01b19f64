package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"text/tabwriter"
)

// A command is a subcommand's flags and help: what -h prints, the same way
// for every subcommand.
type command struct {
	fs       *flag.FlagSet
	synopsis string   // the usage line after "usage: "
	about    string   // what the command does
	env      []string // the environment variables it reads: "NAME\twhat"
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
	}, oauthEnv, embeddingsEnv, otelEnv)
)

// newCommand makes a command that reads the environment variables env.
func newCommand(name, synopsis, about string, env ...[]string) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned, help printed by usage
	fs.Usage = func() {}
	return &command{fs: fs, synopsis: synopsis, about: about, env: slices.Concat(env...)}
}

// errHelpShown ends a command whose help was asked for and printed.
var errHelpShown = errors.New("help shown")

// parse parses args. -h prints the help to stdout and returns errHelpShown;
// a bad flag prints it to stderr and returns a usageError.
func (c *command) parse(args []string, stdout, stderr io.Writer) error {
	err := c.fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.usage(stdout)
		return errHelpShown
	case err != nil:
		c.usage(stderr)
		return usageError{err}
	}
	return nil
}

func (c *command) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n\nFlags:\n", c.synopsis, c.about)
	c.fs.SetOutput(w)
	c.fs.PrintDefaults()
	c.fs.SetOutput(io.Discard)
	fmt.Fprintln(w, "\nEnvironment:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, e := range c.env {
		fmt.Fprintf(tw, "  %s\n", e)
	}
	tw.Flush()
}

// tokenEnv is the variable of the commands that serve over HTTP.
var tokenEnv = []string{"ROBBY_TOKEN\tthe bearer token (robby serve: TOKEN or USER:TOKEN), when no -token (or -token-file) is given; unlike a flag, not visible in ps"}

// needToken refuses to serve on addr, other than loopback, without a token,
// unless the operator said -insecure-no-token.
func needToken(addr string, hasToken, insecure bool) error {
	if hasToken || insecure || isLoopback(addr) {
		return nil
	}
	return fmt.Errorf("refusing to serve on %s without a token: anyone who can reach it could run the agent and its tools.\n"+
		"Set one with ROBBY_TOKEN=... (not visible in ps) or -token, listen on loopback (127.0.0.1), or pass -insecure-no-token", addr)
}

// warnOpen says, once serving, that addr is open to anyone.
func warnOpen(stderr io.Writer, addr string, hasToken bool) {
	if !hasToken && !isLoopback(addr) {
		fmt.Fprintln(stderr, "robby: warning: no token (-insecure-no-token): anyone who reaches this address runs the agent and its tools")
	}
}

// isLoopback reports whether addr ("host:port") listens on loopback only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
