package robby_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robby-go/robby"
)

// Benchmarks of robby at scale: connections over many conversations, and
// many conversations at once. See docs/BENCHMARKS.md.

// A scaleServer serves newRun3Server's conversation, each answer held for
// delay, and counts the connections it accepts and the requests it holds at
// once.
type scaleServer struct {
	*httptest.Server
	URL      string
	conns    atomic.Int64 // accepted so far
	inFlight atomic.Int64
	peak     atomic.Int64 // most requests held at once
}

func newScaleServer(tb testing.TB, delay time.Duration) *scaleServer {
	run3 := newRun3Server(tb)
	s := &scaleServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
		}
		time.Sleep(delay)
		run3.ServeHTTP(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	s.URL = s.Server.URL + "/v1"
	tb.Cleanup(s.Close)
	return s
}

// BenchmarkConnectionsPerConversation builds a new agent for every
// three-turn conversation, as a program handling one request per agent
// does, and reports the connections each conversation opened: agents share
// robby's default transport, so after the first conversation none should.
func BenchmarkConnectionsPerConversation(b *testing.B) {
	srv := newScaleServer(b, 0)
	ctx := context.Background()
	for b.Loop() {
		a := newRun3Agent(b, srv.URL, benchRobbyTools())
		robbyRun3(b, ctx, a)
		a.Close()
	}
	b.ReportMetric(float64(srv.conns.Load()-1)/float64(b.N), "new-conns/conversation")
}

// BenchmarkConversationsInFlight runs n three-turn conversations at once,
// each on its own clone of one agent, against a server that holds every
// answer 50 ms so that all of them are in flight together. It reports the
// failures (the run fails on any), the most requests the server held at
// once, the connections opened per conversation (over all iterations: the
// first batch needs one each, for its three turns; later ones reuse them),
// and the heap that each conversation keeps once it is done and idle (its
// clone and its six messages, with their JSON).
func BenchmarkConversationsInFlight(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprint("conversations=", n), func(b *testing.B) {
			srv := newScaleServer(b, 50*time.Millisecond)
			a := newRun3Agent(b, srv.URL, benchRobbyTools())
			defer a.Close()
			ctx := context.Background()
			var failed atomic.Int64
			var idle int64
			for b.Loop() {
				convs := make([]*robby.Agent, n)
				var wg sync.WaitGroup
				for i := range convs {
					convs[i] = a.Clone()
					wg.Go(func() {
						res, err := convs[i].Run(ctx, benchPrompt)
						if err != nil || res.Text != benchAnswer || len(res.ToolCalls) != 3 {
							failed.Add(1)
						}
					})
				}
				wg.Wait()
				// What the conversations hold is what the heap loses
				// when they go.
				with := heapAlloc()
				runtime.KeepAlive(convs)
				convs = nil
				idle = (with - heapAlloc()) / int64(n)
			}
			if failed.Load() > 0 {
				b.Fatalf("%d of %d conversations failed", failed.Load(), n*b.N)
			}
			b.ReportMetric(float64(srv.peak.Load()), "peak-in-flight")
			b.ReportMetric(float64(srv.conns.Load())/float64(n*b.N), "new-conns/conversation")
			b.ReportMetric(float64(idle), "B/idle-conversation")
		})
	}
}

// heapAlloc returns the bytes of live heap objects, after a collection.
func heapAlloc() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
