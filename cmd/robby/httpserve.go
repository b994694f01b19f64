package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// shutdownGrace is how long a stopping server lets running streams finish.
const shutdownGrace = 30 * time.Second

// serveHTTP serves h on ln until ctx is done, then drains. It stops accepting
// and lets running requests finish for shutdownGrace. It then cuts those still
// running, and reports it.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler, stderr io.Writer) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		// No WriteTimeout: an answer streams for as long as the agent works.
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(stderr, "robby: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("requests still running after %v were cut: %w", shutdownGrace, err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// checkAddr refuses an -addr that is not HOST:PORT, before anything else
// is said about it.
func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = net.LookupPort("tcp", port)
	}
	if err != nil {
		return usageError{fmt.Errorf("bad -addr %q: give HOST:PORT, such as 127.0.0.1:8080, or :8080 for every interface", addr)}
	}
	return nil
}

// listen listens on addr, saying what to do when it cannot.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-addr %s: %w: is another server listening there? stop it or give another -addr", addr, err)
	}
	return ln, nil
}
