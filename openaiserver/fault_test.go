package openaiserver_test

// The endpoint's part of the fault injection suite (go test -run Fault;
// the others are the root package's): clients that hang up. The numbers
// the test logs with -v are quoted in docs/RELIABILITY.md.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
)

// TestFaultServerClientsDisconnect runs 500 streamed conversations at once
// through the endpoint; a third of the clients, chosen by a seeded generator,
// hang up after their first chunk. The others get their whole answer; the
// upstream requests of those that left are cancelled; no handler or
// goroutine is left.
func TestFaultServerClientsDisconnect(t *testing.T) {
	const n = 500
	leaks := goleak.IgnoreCurrent()
	rng := rand.New(rand.NewPCG(2026, 7))
	doomed := make([]bool, n)
	ndoomed := 0
	for i := range doomed {
		if doomed[i] = rng.IntN(3) == 0; doomed[i] {
			ndoomed++
		}
	}
	answer := func(i int) string { return fmt.Sprintf("answer number %d comes in seven words", i) }

	var (
		upstreamCancelled, upstreamCompleted, upstreamStuck atomic.Int32
		hangUp, upstreamSaw                                 [n]atomic.Int64 // unix nanos
	)
	// stop releases the upstream requests that were never cancelled,
	// once the test has waited long enough for them.
	stop := make(chan struct{})
	var stopOnce sync.Once
	release := func() { stopOnce.Do(func() { close(stop) }) }
	defer release()
	upstream := robbytest.NewServer()
	defer upstream.Close()
	for range n {
		upstream.Reply(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			var i int
			fmt.Sscanf(req.Messages[len(req.Messages)-1].Content, "question %d", &i)
			if !doomed[i] {
				return robbytest.Handler(func(w http.ResponseWriter, r *http.Request) {
					// Counted as [DONE] is written, before the client can see it.
					robbytest.Text(answer(i)).WithDelay(5*time.Millisecond).ServeHTTP(faultDoneWriter{w, &upstreamCompleted}, r)
				})
			}
			// The client will hang up: send a first word, then wait.
			return robbytest.Handler(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, faultChunk("first "))
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					upstreamSaw[i].Store(time.Now().UnixNano())
					upstreamCancelled.Add(1)
				case <-stop:
					upstreamStuck.Add(1)
				}
			})
		}))
	}
	a, err := robby.New(robby.WithBaseURL(upstream.URL), robby.WithAPIKey(""), robby.WithModel("test-model"), robby.WithRequestOptions(option.WithMaxRetries(0)))
	require.NoError(t, err)
	defer a.Close()
	var inflight, served atomic.Int32
	handler := openaiserver.New(map[string]*robby.Agent{"robby": a}, openaiserver.Options{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inflight.Add(1)
		defer inflight.Add(-1)
		defer served.Add(1)
		handler.ServeHTTP(w, r)
	}))
	defer hs.Close()
	transport := &http.Transport{MaxIdleConnsPerHost: n}
	defer transport.CloseIdleConnections()
	client := openai.NewClient(option.WithBaseURL(hs.URL+"/v1"), option.WithAPIKey("k"), option.WithMaxRetries(0),
		option.WithHTTPClient(&http.Client{Transport: transport}))

	var (
		wg            sync.WaitGroup
		full, stopped atomic.Int32
		failures      sync.Map
		longest       atomic.Int64
	)
	// A bound for all, should robby hang.
	clientsCtx, cancelClients := context.WithTimeout(t.Context(), time.Minute)
	defer cancelClients()
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			began := time.Now()
			ctx, cancel := context.WithCancel(clientsCtx)
			defer cancel()
			s := client.Chat.Completions.NewStreaming(ctx, userParams(fmt.Sprintf("question %d", i)))
			defer s.Close()
			var text strings.Builder
			chunks := 0
			for s.Next() {
				chunks++
				for _, ch := range s.Current().Choices {
					text.WriteString(ch.Delta.Content)
				}
				if doomed[i] && chunks == 1 {
					hangUp[i].Store(time.Now().UnixNano())
					cancel()
				}
			}
			switch {
			case doomed[i]:
				if !errors.Is(s.Err(), context.Canceled) {
					failures.Store(i, fmt.Sprintf("hung up, but the stream ended with %v", s.Err()))
				} else {
					stopped.Add(1)
				}
			case s.Err() != nil:
				failures.Store(i, s.Err().Error())
			case text.String() != answer(i):
				failures.Store(i, fmt.Sprintf("got %q", text.String()))
			default:
				full.Add(1)
				d := int64(time.Since(began))
				for m := longest.Load(); d > m && !longest.CompareAndSwap(m, d); m = longest.Load() {
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	failures.Range(func(k, v any) bool {
		t.Errorf("client %d: %v", k, v)
		return true
	})
	// Each cancelled client's upstream request ends.
	assert.Eventually(t, func() bool { return upstreamCancelled.Load() == int32(ndoomed) }, 30*time.Second, 10*time.Millisecond,
		"upstream requests of clients that hung up are still running")
	release()
	// How long a hang-up took to reach the upstream.
	var lags []time.Duration
	for i := range n {
		if doomed[i] && upstreamSaw[i].Load() != 0 {
			lags = append(lags, time.Duration(upstreamSaw[i].Load()-hangUp[i].Load()))
		}
	}
	slices.Sort(lags)
	var median, slowest time.Duration
	if len(lags) > 0 {
		median, slowest = lags[len(lags)/2], lags[len(lags)-1]
	}
	t.Logf("%d streams in %v: %d full answers (slowest %v), %d clients hung up; upstream: %d completed, %d cancelled "+
		"(%v after the client left at the median, %v at most), %d never cancelled",
		n, elapsed.Round(time.Millisecond), full.Load(), time.Duration(longest.Load()).Round(time.Millisecond), stopped.Load(),
		upstreamCompleted.Load(), upstreamCancelled.Load(), median.Round(time.Millisecond), slowest.Round(time.Millisecond), upstreamStuck.Load())
	assert.EqualValues(t, n-ndoomed, full.Load(), "full answers")
	assert.EqualValues(t, ndoomed, stopped.Load(), "clients that hung up")
	assert.EqualValues(t, n-ndoomed, upstreamCompleted.Load())
	assert.EqualValues(t, ndoomed, upstreamCancelled.Load(), "upstream requests cancelled with their client")
	assert.Zero(t, upstreamStuck.Load())
	// No cap on elapsed: clientsCtx bounds a hang, and the machine's load
	// sets the time. Handlers return once their client and upstream are
	// done, later the more loaded the machine.
	assert.Eventually(t, func() bool { return inflight.Load() == 0 }, 30*time.Second, 5*time.Millisecond, "handlers still running")
	assert.EqualValues(t, n, served.Load())
	assert.Len(t, upstream.Requests(), n)
	for _, req := range upstream.Requests() {
		assert.Len(t, req.Messages, 1, "a conversation saw another's messages")
	}

	transport.CloseIdleConnections()
	hs.Close()
	upstream.Close()
	goleak.VerifyNone(t, leaks)
}

// faultDoneWriter counts the streams that reached their [DONE].
type faultDoneWriter struct {
	http.ResponseWriter
	done *atomic.Int32
}

func (w faultDoneWriter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), "data: [DONE]") {
		w.done.Add(1)
	}
	return w.ResponseWriter.Write(p)
}

func (w faultDoneWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

func faultChunk(text string) string {
	b, _ := json.Marshal(text)
	return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":` +
		string(b) + `},"finish_reason":null}]}` + "\n\n"
}
