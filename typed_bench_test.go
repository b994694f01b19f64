//go:build unix

package robby_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

type benchCity struct {
	Name       string   `json:"name" jsonschema:"the city's name"`
	Country    string   `json:"country"`
	Population int      `json:"population"`
	Landmarks  []string `json:"landmarks"`
}

const benchCityJSON = `{"name": "Paris", "country": "France", "population": 2102650, "landmarks": ["Eiffel Tower", "Louvre", "Notre-Dame"]}`

// BenchmarkTypedRun is a typed run next to the same run returning the
// same JSON as text (Run), both against the same robbytest server. The
// typed run is RunTyped in native mode: response_format sent, the answer
// validated and decoded. The ratio is what asking for a Go value costs.
// "answer" is one turn; "tool" calls a tool first, two turns. Besides wall
// time, each reports the process's CPU time per run (client and server:
// getrusage). A loaded machine's waiting does not inflate it.
func BenchmarkTypedRun(b *testing.B) {
	benchTypedRun(b, func(b *testing.B, model string) string {
		srv := robbytest.NewServer()
		b.Cleanup(srv.Close)
		srv.Fallback(robby.TypedBenchModel(model, benchCityJSON))
		return srv.URL
	})
}

// BenchmarkTypedRunClient is BenchmarkTypedRun with the server in a
// process of its own (this test binary run again). So cpu-ns/op counts the
// client's CPU alone: what robby itself spends, without the fake
// provider's share of reading the larger request.
func BenchmarkTypedRunClient(b *testing.B) {
	benchTypedRun(b, func(b *testing.B, model string) string {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "ROBBY_TEST_CHAT_SERVER="+model, "ROBBY_TEST_CHAT_ANSWER="+benchCityJSON,
			"GORACE=atexit_sleep_ms=0")
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			in.Close() // the server's cue to stop
			cmd.Wait()
		})
		url, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			b.Fatal("the server process printed no URL:", err)
		}
		return strings.TrimSpace(url)
	})
}

// benchTypedRun runs the text and typed runs against the server of each
// model that serve starts, returning its URL.
func benchTypedRun(b *testing.B, serve func(b *testing.B, model string) string) {
	add := robby.NewTool("add", "Adds two numbers", func(_ context.Context, in struct {
		A int `json:"a"`
		B int `json:"b"`
	}) (int, error) {
		return in.A + in.B, nil
	})
	ctx := context.Background()
	for _, name := range []string{"answer", "tool"} {
		a := newRun3Agent(b, serve(b, name), []robby.Tool{add})
		b.Cleanup(func() { a.Close() })
		b.Run(name+"/text", func(b *testing.B) {
			defer cpuPerOp(b)()
			for b.Loop() {
				a.Reset()
				res, err := a.Run(ctx, "Describe Paris")
				if err != nil || res.Text != benchCityJSON {
					b.Fatal(err, res.Text)
				}
			}
		})
		b.Run(name+"/typed", func(b *testing.B) {
			defer cpuPerOp(b)()
			for b.Loop() {
				a.Reset()
				got, _, err := robby.RunTyped[benchCity](ctx, a, "Describe Paris", robby.WithAnswerMode(robby.AnswerNative))
				if err != nil || got.Population != 2102650 {
					b.Fatal(err, got)
				}
			}
		})
	}
}

// cpuPerOp starts counting the process's CPU time; the function it returns
// reports it per iteration, as cpu-ns/op.
func cpuPerOp(b *testing.B) func() {
	start := cpuTime(b)
	return func() {
		b.ReportMetric(float64((cpuTime(b)-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
