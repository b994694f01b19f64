package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"
)

// Block and mutex profiling rates of -pprof: a sample per 10 µs spent
// blocked, one contention event in 10. Both cost little, and
// only with -pprof.
const (
	pprofBlockRate     = 10_000 // ns
	pprofMutexFraction = 10
)

// startPprof serves the runtime's profiles (net/http/pprof) under
// /debug/pprof/ on addr, which must be loopback: they carry no token. It
// turns block and mutex profiling on. It leaves out /debug/pprof/cmdline, whose
// arguments may hold a key. stop ends it.
func startPprof(addr string, stderr io.Writer) (stop func(), err error) {
	if !isLoopback(addr) {
		return nil, fmt.Errorf("-pprof %s: the profiles carry no token, so they listen on loopback only (such as 127.0.0.1:6060)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-pprof: %w", err)
	}
	runtime.SetBlockProfileRate(pprofBlockRate)
	runtime.SetMutexProfileFraction(pprofMutexFraction)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	fmt.Fprintf(stderr, "robby: profiles at http://%s/debug/pprof/\n", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		srv.Close()
		runtime.SetBlockProfileRate(0)
		runtime.SetMutexProfileFraction(0)
	}, nil
}
