package openaiserver_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/sqlitestore"
)

// epUpstream is a fake model that streams a fixed answer: a role chunk, then
// words spaced by gap, then the finish chunk and [DONE].
func epUpstream(words int, gap time.Duration) *httptest.Server {
	chunk := func(delta, finish string) string {
		return fmt.Sprintf(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, finish)
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		fmt.Fprint(w, chunk(`{"role":"assistant","content":""}`, "null"))
		f.Flush()
		for i := range words {
			if gap > 0 {
				time.Sleep(gap)
			}
			fmt.Fprint(w, chunk(fmt.Sprintf(`{"content":"w%d "}`, i), "null"))
			f.Flush()
		}
		fmt.Fprint(w, chunk(`{}`, `"stop"`))
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
}

// epEndpoint serves an agent on upstream through robby's endpoint.
func epEndpoint(tb testing.TB, upstream string) *httptest.Server {
	a, err := robby.New(robby.WithBaseURL(upstream+"/v1"), robby.WithAPIKey(""), robby.WithModel("m"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { a.Close() })
	return httptest.NewServer(openaiserver.New(map[string]*robby.Agent{"robby": a}, openaiserver.Options{}))
}

func epClient(base string) openai.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 2000
	return openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey("k"), option.WithMaxRetries(0),
		option.WithHTTPClient(&http.Client{Transport: t}))
}

var epParams = openai.ChatCompletionNewParams{Model: "robby", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}

// epStream streams one answer and returns the time to its first word and
// the whole text.
func epStream(tb testing.TB, client openai.Client) (time.Duration, string) {
	start := time.Now()
	var ttfb time.Duration
	s := client.Chat.Completions.NewStreaming(tb.Context(), epParams)
	defer s.Close()
	var text strings.Builder
	for s.Next() {
		for _, ch := range s.Current().Choices {
			if ch.Delta.Content != "" && ttfb == 0 {
				ttfb = time.Since(start)
			}
			text.WriteString(ch.Delta.Content)
		}
	}
	if err := s.Err(); err != nil {
		tb.Fatal(err)
	}
	return ttfb, text.String()
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

// BenchmarkEndpointTTFB measures the time to the first word of an answer,
// asked directly of the upstream and through robby's endpoint, in one run:
// the difference is what the endpoint adds.
func BenchmarkEndpointTTFB(b *testing.B) {
	upstream := epUpstream(20, 0)
	defer upstream.Close()
	ep := epEndpoint(b, upstream.URL)
	defer ep.Close()
	for _, target := range []struct{ name, url string }{{"direct", upstream.URL}, {"robby", ep.URL}} {
		b.Run(target.name, func(b *testing.B) {
			client := epClient(target.url)
			var ttfb []time.Duration
			for b.Loop() {
				d, text := epStream(b, client)
				if !strings.HasPrefix(text, "w0 w1") {
					b.Fatalf("answer %q", text)
				}
				ttfb = append(ttfb, d)
			}
			b.ReportMetric(float64(median(ttfb).Microseconds()), "ttfb-µs")
		})
	}
}

// BenchmarkEndpointConcurrentStreams holds n streamed conversations open at
// once (each answer takes about 200 ms) and counts the failures.
func BenchmarkEndpointConcurrentStreams(b *testing.B) {
	upstream := epUpstream(20, 10*time.Millisecond)
	defer upstream.Close()
	ep := epEndpoint(b, upstream.URL)
	defer ep.Close()
	client := epClient(ep.URL)
	for _, n := range []int{100, 500, 1000} {
		b.Run(fmt.Sprint("conversations=", n), func(b *testing.B) {
			var failed atomic.Int64
			for b.Loop() {
				var wg sync.WaitGroup
				for range n {
					wg.Go(func() {
						s := client.Chat.Completions.NewStreaming(b.Context(), epParams)
						defer s.Close()
						words := 0
						for s.Next() {
							for _, ch := range s.Current().Choices {
								if ch.Delta.Content != "" {
									words++
								}
							}
						}
						if s.Err() != nil || words != 20 {
							failed.Add(1)
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(failed.Load()), "failed")
		})
	}
}

// BenchmarkResponsesTurn times a streamed Responses turn that continues the
// previous one (previous_response_id) in a conversation of three turns, kept
// in a SQLite file, and a turn not kept ("store": false), in one run: the
// difference is what keeping it costs.
func BenchmarkResponsesTurn(b *testing.B) {
	upstream := epUpstream(20, 0)
	defer upstream.Close()
	a, err := robby.New(robby.WithBaseURL(upstream.URL+"/v1"), robby.WithAPIKey(""), robby.WithModel("m"))
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	store, err := sqlitestore.Open(b.Context(), filepath.Join(b.TempDir(), "r.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	ep := httptest.NewServer(openaiserver.New(map[string]*robby.Agent{"robby": a}, openaiserver.Options{Store: store}))
	defer ep.Close()
	client := epClient(ep.URL)
	for _, stored := range []bool{false, true} {
		b.Run(fmt.Sprint("stored=", stored), func(b *testing.B) {
			prev, turn := "", 0
			for b.Loop() {
				if turn++; turn%3 == 1 {
					prev = ""
				}
				params := responses.ResponseNewParams{Model: "robby", Store: openai.Bool(stored),
					Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
				if prev != "" {
					params.PreviousResponseID = openai.String(prev)
				}
				s := client.Responses.NewStreaming(b.Context(), params)
				for s.Next() {
					if ev := s.Current(); ev.Type == "response.completed" && stored {
						prev = ev.Response.ID
					}
				}
				if err := s.Err(); err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}
