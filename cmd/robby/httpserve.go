package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// defaultDrain is how long a stopping server lets running streams finish.
const defaultDrain = 30 * time.Second

// cutGrace is how long the requests cut at the end of the drain have to
// end their answers and store what they have.
const cutGrace = 5 * time.Second

// httpFlags are how robby serve serves HTTP: its drain on stopping, and
// its profiles.
type httpFlags struct {
	drain time.Duration
	pprof string
}

func (f *httpFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.drain, "drain", defaultDrain, "on SIGTERM or SIGINT, how long the requests in flight have to finish, once the listener is closed; then they are cancelled, each answer kept as it was")
	fs.StringVar(&f.pprof, "pprof", "", "loopback `HOST:PORT` that serves the runtime's profiles at /debug/pprof/ (net/http/pprof), with block and mutex profiling on (default: off)")
}

// serveHTTP serves h on ln until ctx is done, then drains. It closes the
// listener at once, so a proxy sends new requests to another replica, and
// lets running requests finish for f.drain. It then cancels those still
// running, with cause [http.ErrServerClosed]: their handlers end their answers
// and store what they have. It returns once every handler has returned, so
// the store closes after their last write.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler, f httpFlags, stderr io.Writer) error {
	if f.drain < 0 {
		return fmt.Errorf("-drain is %v: it must be 0 or more", f.drain)
	}
	if f.pprof != "" {
		stop, err := startPprof(f.pprof, stderr)
		if err != nil {
			return err
		}
		defer stop()
	}
	base, cut := context.WithCancelCause(context.Background())
	defer cut(nil)
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		// No WriteTimeout: an answer streams for as long as the agent works.
		BaseContext: func(net.Listener) context.Context { return base },
	}
	// Shutdown runs its hooks once it has closed the listeners: the log
	// says "no new requests" only when it is so.
	closed := make(chan struct{})
	var closing sync.Once
	srv.RegisterOnShutdown(func() { closing.Do(func() { close(closed) }) })
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	drained := make(chan bool, 1)
	go func() { drained <- shutdown(srv, f.drain) }()
	<-closed
	fmt.Fprintf(stderr, "robby: shutting down: no new requests; those in flight have %v to finish\n", f.drain)
	if !<-drained {
		fmt.Fprintln(stderr, "robby: drain over: cancelling the requests still running")
		cut(http.ErrServerClosed)
		if !shutdown(srv, cutGrace) {
			srv.Close()
			return fmt.Errorf("requests still running %v after they were cancelled were cut", cutGrace)
		}
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// shutdown shuts srv down, and reports whether its requests all ended within
// grace.
func shutdown(srv *http.Server, grace time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	srv.Shutdown(ctx)
	return ctx.Err() == nil
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
