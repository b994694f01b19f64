package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/robby-go/robby"
)

func serveCmd(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f agentFlags
	f.register(fs)
	addr := fs.String("addr", ":8080", "address to listen on")
	token := fs.String("token", "", "bearer token clients must send (none if empty)")
	steps := fs.Bool("show-tools", false, "stream tool steps to clients as reasoning")
	if err := fs.Parse(args); err != nil {
		return err
	}
	agent, err := f.newAgent(stderr)
	if err != nil {
		return err
	}
	defer f.close()
	defer agent.Close()
	log := slog.New(slog.NewTextHandler(stderr, nil))
	handler := robby.NewServer(map[string]*robby.Agent{f.model: agent},
		&robby.ServerOptions{Token: *token, ShowToolSteps: *steps, Logger: log})

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "robby: serving %s (%d tools) on http://%s/v1 → %s\n", f.model, len(agent.Tools()), ln.Addr(), f.baseURL)
	return serveHTTP(ctx, ln, handler, stderr)
}
