package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robby-go/robby/internal/pgtest"
)

var figures = flag.String("figures", "", "comma-separated user counts for TestFigures, such as 10,100,500,1000")

// TestLoad drives a robby serve built with the race detector with 50 users,
// each a 3-turn streamed conversation whose first turn calls a tool, over
// the Responses API and chat completions, with the responses kept in SQLite
// and in PostgreSQL. Nothing fails, no goroutine is left, and the store holds
// each prompt sent, once. It records no timing: the figures are TestFigures'.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds robby and runs it under load")
	}
	bin := filepath.Join(t.TempDir(), "robby")
	ctx, cancel := context.WithTimeout(t.Context(), 25*time.Minute) // a cold race build of robby takes minutes
	defer cancel()
	if err := buildRobby(ctx, ".", bin, true); err != nil {
		t.Fatal(err)
	}
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			url := store
			if store == "postgres" {
				url = pgtest.Start(t).NewDatabase(t)
			}
			cfg := config{Users: 50, Turns: 3, Chunks: 20, Latency: 200 * time.Millisecond, APIs: []string{apiResponses, apiChat},
				Store: url, Dir: t.TempDir(), Floor: store == "sqlite", Robby: bin, Log: os.Stderr}
			results, err := run(ctx, cfg)
			var out strings.Builder
			printResults(&out, cfg, results)
			t.Log("\n" + out.String())
			if err != nil {
				t.Fatal(err)
			}
			if len(results) != len(cfg.APIs)+map[bool]int{true: 1}[cfg.Floor] {
				t.Fatalf("%d results", len(results))
			}
			for _, r := range results {
				if err := r.check(); err != nil {
					t.Error(err)
				}
				if want := cfg.Users * cfg.Turns; r.Requests != want {
					t.Errorf("%s: %d requests, want %d", r.Name, r.Requests, want)
				}
				if r.robby && (r.GoStart == 0 || r.RSSPeak <= r.RSSBase) {
					t.Errorf("%s: goroutines %d, RSS %d → %d: not read", r.Name, r.GoStart, r.RSSBase, r.RSSPeak)
				}
				if r.Name == "robby responses, store "+store && (!r.storedCheck || r.Stored != cfg.Users*cfg.Turns) {
					t.Errorf("%s: %d prompts stored, want %d", r.Name, r.Stored, cfg.Users*cfg.Turns)
				}
			}
		})
	}
}

// TestFigures runs the load for the figures of docs/BENCHMARKS.md, at each
// user count of -figures, with SQLite (without and with the limits per user
// counting), PostgreSQL, and the floor. Run it
// on a quiet machine:
//
//	cd bench && GOWORK=off go test -run '^TestFigures$' -v -timeout 3h ./load -args -figures 10,100,500,1000
func TestFigures(t *testing.T) {
	if *figures == "" {
		t.Skip("give -figures N,N,...")
	}
	bin := filepath.Join(t.TempDir(), "robby")
	if err := buildRobby(t.Context(), ".", bin, false); err != nil {
		t.Fatal(err)
	}
	pg := pgtest.Start(t)
	for n := range strings.SplitSeq(*figures, ",") {
		users, err := strconv.Atoi(n)
		if err != nil {
			t.Fatal(err)
		}
		for i, store := range []string{"sqlite", "sqlite", pg.NewDatabase(t)} {
			cfg := config{Users: users, Turns: 3, Chunks: 20, Latency: 200 * time.Millisecond, APIs: []string{apiResponses, apiChat},
				Store: store, Dir: t.TempDir(), Floor: i == 0, Limits: i == 1, Robby: bin, Log: os.Stderr}
			results, err := run(t.Context(), cfg)
			printResults(os.Stdout, cfg, results)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				if err := r.check(); err != nil {
					t.Error(err)
				}
			}
		}
	}
}
