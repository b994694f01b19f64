package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/robby-go/robby"
)

// shutdownGrace is how long a stopping server lets running streams finish.
const shutdownGrace = 30 * time.Second

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
	defer agent.Close()
	log := slog.New(slog.NewTextHandler(stderr, nil))
	handler := robby.NewServer(map[string]*robby.Agent{f.model: agent},
		&robby.ServerOptions{Token: *token, ShowToolSteps: *steps, Logger: log})

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		// No WriteTimeout: an answer streams for as long as the agent works.
	}
	fmt.Fprintf(stderr, "robby: serving %s (%d tools) on http://%s/v1 → %s\n", f.model, len(agent.Tools()), ln.Addr(), f.baseURL)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Drain: stop accepting, let running streams finish.
	fmt.Fprintln(stderr, "robby: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
