package robby_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/robby-go/robby"
)

// latencyServer streams words, each written and flushed right after its
// send time is noted, after a pause, so that each word is alone on the wire when the
// client reads it.
type latencyServer struct {
	words int
	pause time.Duration
	sent  []atomic.Int64 // unix nanos each word was written
}

func (s *latencyServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	f := w.(http.Flusher)
	chunk := func(delta, finish string) {
		fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, finish)
		f.Flush()
	}
	chunk(`{"role":"assistant","content":""}`, "null")
	for i := range s.words {
		time.Sleep(s.pause)
		s.sent[i].Store(time.Now().UnixNano())
		chunk(fmt.Sprintf(`{"content":"%d "}`, i), "null")
	}
	chunk(`{}`, `"stop"`)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// BenchmarkStreamLatency measures how long a word takes from the server's
// write to the caller: to robby's EventText, and, in the same run, to the
// openai-go stream's Next. The median over all words is reported.
func BenchmarkStreamLatency(b *testing.B) {
	const words = 50
	ls := &latencyServer{words: words, pause: 2 * time.Millisecond, sent: make([]atomic.Int64, words)}
	srv := httptest.NewServer(ls)
	defer srv.Close()
	params := openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("count")}}
	received := func(lat *[]time.Duration, i int) {
		now := time.Now().UnixNano()
		*lat = append(*lat, time.Duration(now-ls.sent[i].Load()))
	}
	reset := func() {
		for i := range ls.sent {
			ls.sent[i].Store(0)
		}
	}

	// The guarded runs redact: from the pattern's literal prefix, which no
	// word has (no text held back), and with a window of 23 bytes held
	// back from every digit (about eight words here). See docs/GUARDS.md.
	for _, side := range []struct {
		name  string
		guard []robby.Guard
	}{
		{"robby", nil},
		{"robby-guard-prefix", []robby.Guard{{On: robby.GuardOutput, Pattern: regexp.MustCompile(`sk-[A-Za-z0-9]{20,}`), Action: robby.Redact}}},
		{"robby-guard-window", []robby.Guard{{On: robby.GuardOutput, Pattern: regexp.MustCompile(`\d{4}-\d{4}-\d{4}-\d{4}`), Action: robby.Redact}}},
	} {
		b.Run(side.name, func(b *testing.B) {
			a, err := robby.New(robby.WithBaseURL(srv.URL+"/v1"), robby.WithAPIKey(""), robby.WithModel("m"), robby.WithGuards(side.guard...))
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			var lat []time.Duration
			for b.Loop() {
				reset()
				i := 0
				for ev, err := range a.Stream(b.Context(), "count") {
					if err != nil {
						b.Fatal(err)
					}
					if ev.Kind == robby.EventText {
						for range strings.Count(ev.Delta, " ") { // a held-back delta releases several words
							received(&lat, i)
							i++
						}
					}
				}
				if i != words {
					b.Fatalf("%d words", i)
				}
				a.Reset()
			}
			b.ReportMetric(float64(median(lat).Microseconds()), "µs-to-caller")
		})
	}
	b.Run("openai-go", func(b *testing.B) {
		client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey(""))
		var lat []time.Duration
		for b.Loop() {
			reset()
			s := client.Chat.Completions.NewStreaming(b.Context(), params)
			i := 0
			for s.Next() {
				if c := s.Current(); len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
					received(&lat, i)
					i++
				}
			}
			if err := s.Err(); err != nil || i != words {
				b.Fatalf("%v, %d words", err, i)
			}
			s.Close()
		}
		b.ReportMetric(float64(median(lat).Microseconds()), "µs-to-caller")
	})
}

// BenchmarkLongConversation measures one more turn of a conversation that
// already holds n messages of about 1 KB (1,000 of them make 1 MB of
// history), through robby and with raw openai-go, in one run. robby's
// conversation was built by earlier turns, as in a real one, so its
// messages are encoded already; each iteration asks on a clone of it.
// Both sides send the whole history: the fake server reads it all. A third
// side, "http", posts the same request body, built beforehand, with
// net/http alone: the cost of moving the bytes, which no client avoids.
// "robby-compaction" is robby's turn with WithCompaction, in a window the
// conversation fits: the cost of the budget check.
func BenchmarkLongConversation(b *testing.B) {
	reply := []byte(`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	var last atomic.Pointer[[]byte] // the last request body
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		last.Store(&body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(reply)
	}))
	defer srv.Close()
	for _, n := range []int{10, 100, 1000} {
		history := make([]openai.ChatCompletionMessageParamUnion, n)
		for i := range history {
			text := fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum ", 85))
			if i%2 == 0 {
				history[i] = openai.UserMessage(text)
			} else {
				history[i] = openai.AssistantMessage(text)
			}
		}
		question := openai.UserMessage("and then?")
		robbyTurn := func(b *testing.B, opts ...robby.Option) {
			a, err := robby.New(append(opts, robby.WithBaseURL(srv.URL+"/v1"), robby.WithAPIKey(""), robby.WithModel("m"))...)
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			a.SetMessages(history[:n-1])
			if _, err := a.ChatCompletion(b.Context()); err != nil { // the earlier turns
				b.Fatal(err)
			}
			for b.Loop() {
				c := a.Clone()
				c.AddMessages(question)
				if _, err := c.ChatCompletion(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.Run(fmt.Sprintf("messages=%d/robby", n), func(b *testing.B) { robbyTurn(b) })
		// The same turn with the budget check, in a window it fits.
		b.Run(fmt.Sprintf("messages=%d/robby-compaction", n), func(b *testing.B) {
			robbyTurn(b, robby.WithCompaction(robby.DropOldestTurns()), robby.WithContextWindow(1<<22))
		})
		b.Run(fmt.Sprintf("messages=%d/openai-go", n), func(b *testing.B) {
			client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey(""))
			for b.Loop() {
				msgs := append(history[:n:n], question)
				res, err := client.Chat.Completions.New(b.Context(), openai.ChatCompletionNewParams{Model: "m", Messages: msgs})
				if err != nil || res.Choices[0].Message.Content != "ok" {
					b.Fatal(err)
				}
				_ = append(msgs, res.Choices[0].Message.ToParam())
			}
		})
		b.Run(fmt.Sprintf("messages=%d/http", n), func(b *testing.B) {
			body := *last.Load()
			for b.Loop() {
				res, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				_, err = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if err != nil || res.StatusCode != http.StatusOK {
					b.Fatal(res.Status, err)
				}
			}
		})
	}
}

// median returns the middle of d, which it sorts.
func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}
