// Command load drives a real `robby serve` with concurrent users and reports
// what robby adds to each request.
//
// Each user holds a streamed conversation of -turns turns; its first turn
// has the model call a tool (lookup, an MCP server over streamable HTTP).
// Users talk over the Responses API (continued by previous_response_id) or
// over chat completions (the history sent each turn). The model is a scripted
// chat-completions server on 127.0.0.1 that streams every answer in -chunks
// events over -latency. robby keeps the responses in -store: a SQLite file or
// a PostgreSQL database. The floor is the same conversations sent to the
// model through a plain httputil.ReverseProxy, the client calling the tool on
// the same MCP server with the go-sdk, as robby does. The clients post
// with net/http, split the streams with openai-go's SSE decoder and decode
// only the fields they check, so that the load tool's own CPU, which shares
// the machine, weighs as little as possible on every target.
//
// For each, load prints the requests per second, p50 and p99 of the time
// robby adds to a request (its latency less the model's time on it), the
// errors (any is a failure), robby's resident memory per open conversation,
// its goroutines before and after (from its -pprof profiles), and the user
// messages stored against those sent. It exits 1 when a request failed, a
// goroutine was left, or the store holds other than what was sent, once
// each. Everything listens on 127.0.0.1, and every run ends by itself.
//
//	cd bench && GOWORK=off go run ./load -users 100 -store sqlite
//	cd bench && GOWORK=off go run ./load -users 100 -store postgres://postgres@127.0.0.1:5432/load?sslmode=disable
//
// -profile DIR saves robby's CPU, block and mutex profiles and its execution
// trace of the run's first -profile-seconds (go tool pprof
// DIR/responses/cpu.pprof; go tool trace DIR/responses/trace.out).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {
	var cfg config
	flag.IntVar(&cfg.Users, "users", 50, "concurrent users")
	flag.IntVar(&cfg.Turns, "turns", 3, "turns of each user's conversation; the first calls a tool")
	flag.IntVar(&cfg.Chunks, "chunks", 20, "events of each streamed model answer")
	flag.DurationVar(&cfg.Latency, "latency", 200*time.Millisecond, "time the model takes to stream each answer")
	apis := flag.String("api", "responses,chat", "APIs to load robby over: responses, chat, or both")
	flag.StringVar(&cfg.Store, "store", "sqlite", "where robby keeps responses: sqlite (a file in -dir), a postgres:// URL, or none")
	flag.StringVar(&cfg.Dir, "dir", "", "directory of the SQLite file and robby's binary (default: a temporary one)")
	flag.BoolVar(&cfg.Floor, "floor", true, "also run the floor: the model through httputil.ReverseProxy")
	flag.StringVar(&cfg.Robby, "robby", "", "robby binary (default: built from this repository)")
	flag.BoolVar(&cfg.Race, "race", false, "build robby with the race detector")
	flag.BoolVar(&cfg.Limits, "limits", false, "have robby count each user's requests and tokens (limits per user it never reaches), to measure the counting")
	flag.DurationVar(&cfg.Ramp, "ramp", 0, "time over which users start, evenly (default: all at once)")
	flag.StringVar(&cfg.Profile, "profile", "", "directory to save robby's CPU, block and mutex profiles and execution trace of the run in, one folder an API")
	flag.IntVar(&cfg.ProfileSeconds, "profile-seconds", 10, "seconds of the profiles, from the run's start")
	timeout := flag.Duration("timeout", 15*time.Minute, "time after which the whole run is cancelled")
	flag.Parse()
	cfg.APIs = strings.Split(*apis, ",")
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	cfg.Log = os.Stderr
	results, err := run(ctx, cfg)
	printResults(os.Stdout, cfg, results)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
	for _, r := range results {
		if err := r.check(); err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
	}
}
