package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
)

// defaultAddr is where robby serve listens unless told otherwise: this
// machine only.
const defaultAddr = "127.0.0.1:8080"

func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := newCommand("serve", "robby serve [flags]",
		"Serves the agent as an OpenAI-compatible endpoint (POST /v1/chat/completions, GET /v1/models),\n"+
			"under the name given by -model, until interrupted. It listens on "+defaultAddr+"; on any other\n"+
			"address it needs a bearer token (-token or ROBBY_TOKEN), or -insecure-no-token.",
		tokenEnv, agentEnv)
	fs := cmd.fs
	var f agentFlags
	f.register(fs)
	addr := fs.String("addr", defaultAddr, "address to listen on")
	token := fs.String("token", os.Getenv("ROBBY_TOKEN"), "bearer token clients must send (env ROBBY_TOKEN)")
	insecure := fs.Bool("insecure-no-token", false, "serve without a token on an address other than loopback: anyone who reaches it runs the agent and its tools")
	var origins []string
	fs.Func("cors", "web `origin` whose pages may call the endpoint from a browser (such as https://chat.example.com); repeat or separate with commas", func(v string) error {
		for o := range strings.SplitSeq(v, ",") {
			if o = strings.TrimSpace(o); o != "" {
				origins = append(origins, o)
			}
		}
		return nil
	})
	maxMessages := fs.Int("max-messages", openaiserver.DefaultMaxMessages, "messages a request may hold at most")
	steps := fs.Bool("show-tools", false, "stream tool steps to clients as reasoning")
	if err := cmd.parse(args, stdout, stderr); err != nil {
		return err
	}
	if err := needToken(*addr, *token, *insecure); err != nil {
		return err
	}
	if *maxMessages < 1 {
		return fmt.Errorf("-max-messages is %d: it must be at least 1", *maxMessages)
	}
	agent, err := f.newAgent(stderr)
	if err != nil {
		return err
	}
	defer f.close()
	defer agent.Close()
	log := slog.New(slog.NewTextHandler(stderr, nil))
	handler := openaiserver.New(map[string]*robby.Agent{f.model: agent}, openaiserver.Options{Token: *token,
		MaxMessages: *maxMessages, CORSOrigins: origins, ShowToolSteps: *steps, Logger: log})

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "robby: serving %s (%d tools) on http://%s/v1 → %s\n", f.model, len(agent.Tools()), ln.Addr(), f.baseURL)
	warnOpen(stderr, *addr, *token)
	return serveHTTP(ctx, ln, handler, stderr)
}
