package robby

// The fault injection suite: go test -run Fault ./... Each test injects one
// kind of fault (in the model endpoint, a tool, an MCP server; the clients
// of the endpoint, in package openaiserver) and checks that the run either
// ends with a clear error or recovers, that the conversation stays consistent, and
// that nothing is left running: goroutines (goleak.VerifyTestMain in
// main_test.go, and goleak.VerifyNone in the tests that start many) and
// child processes. The numbers the tests log with -v are quoted in
// docs/RELIABILITY.md.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/robby-go/robby/robbytest"
)

// faultAgent builds an agent on srv with openai-go's default retries (two,
// so three attempts), unlike newTestAgent, which turns them off.
func faultAgent(t *testing.T, srv *robbytest.Server, opts ...Option) *Agent {
	t.Helper()
	base := []Option{WithBaseURL(srv.URL), WithAPIKey(""), WithModel("test-model")}
	a, err := New(append(base, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	return a
}

// faultAsk runs prompt with Run, or with Stream when stream is set, and
// returns what the caller got: the result, the streamed text, the error.
func faultAsk(ctx context.Context, a *Agent, stream bool, prompt string) (*Result, []string, error) {
	if !stream {
		res, err := a.Run(ctx, prompt)
		return res, nil, err
	}
	var (
		deltas []string
		res    *Result
		err    error
	)
	for ev, e := range a.Stream(ctx, prompt) {
		switch ev.Kind {
		case EventText:
			deltas = append(deltas, ev.Delta)
		case EventDone:
			res, err = ev.Result, e
		}
	}
	return res, deltas, err
}

func faultMode(stream bool) string {
	if stream {
		return "stream"
	}
	return "plain"
}

// faultChunk is one chat.completion.chunk event carrying text.
func faultChunk(text string) string {
	b, _ := json.Marshal(text)
	return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":` +
		string(b) + `},"finish_reason":null}]}` + "\n\n"
}

// faultUnchanged checks that a failed run left the conversation as it was.
func faultUnchanged(t *testing.T, a *Agent, before []openai.ChatCompletionMessageParamUnion) {
	t.Helper()
	assert.Equal(t, marshal(t, before), marshal(t, a.Messages()), "the conversation changed")
	checkConsistent(t, a.Messages())
}

// faultRecovers checks that the agent works again after a failed run: the
// same prompt, retried, gets its answer, and the conversation is whole.
func faultRecovers(t *testing.T, a *Agent, srv *robbytest.Server, stream bool) {
	t.Helper()
	srv.Reply(robbytest.Text("back to normal"))
	res, _, err := faultAsk(t.Context(), a, stream, "again")
	require.NoError(t, err)
	assert.Equal(t, "back to normal", res.Text)
	checkConsistent(t, a.Messages())
}

// --- The model endpoint ---

// TestFaultModelConnectionDropped closes the connection in the middle of
// the body, after three chunks of a stream or half a plain JSON body.
func TestFaultModelConnectionDropped(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(faultMode(stream), func(t *testing.T) {
			srv := newServer(t)
			srv.Reply(robbytest.Handler(func(w http.ResponseWriter, r *http.Request) {
				if stream {
					w.Header().Set("Content-Type", "text/event-stream")
					w.WriteHeader(http.StatusOK)
					for i := range 3 {
						io.WriteString(w, faultChunk(fmt.Sprintf("w%d ", i)))
					}
				} else {
					w.Header().Set("Content-Type", "application/json")
					w.Header().Set("Content-Length", "400")
					w.WriteHeader(http.StatusOK)
					io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"half an ans`)
				}
				w.(http.Flusher).Flush()
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Errorf("hijack: %v", err)
					return
				}
				conn.Close()
			}))
			a := faultAgent(t, srv, WithSystem("sys"))
			before := a.Messages()

			start := time.Now()
			res, deltas, err := faultAsk(t.Context(), a, stream, "talk")
			elapsed := time.Since(start)
			require.Error(t, err)
			t.Logf("%s: %q after %v", faultMode(stream), err, elapsed)
			assert.True(t, strings.HasPrefix(err.Error(), "chat completion: "), err.Error())
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
			assert.Less(t, elapsed, 2*time.Second)
			assert.Len(t, srv.Requests(), 1, "a reply that began is not retried")
			if stream {
				assert.Equal(t, []string{"w0 ", "w1 ", "w2 "}, deltas)
				assert.Equal(t, "w0 w1 w2 ", res.Text, "the partial text is kept")
			}
			faultUnchanged(t, a, before)
			faultRecovers(t, a, srv, stream)
		})
	}
}

// TestFaultModelRetriedThenRecovers fails the first attempt with a status
// openai-go retries: the second attempt answers. TestRetriesHonourRetryAfter
// (chat_test.go) chains a 429 and a 500 in one run; this measures each.
func TestFaultModelRetriedThenRecovers(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		header   [2]string
		min, max time.Duration // the wait between the attempts
	}{
		{"429 Retry-After-Ms 100", http.StatusTooManyRequests, [2]string{"Retry-After-Ms", "100"}, 100 * time.Millisecond, 2 * time.Second},
		{"429 Retry-After 1", http.StatusTooManyRequests, [2]string{"Retry-After", "1"}, time.Second, 3 * time.Second},
		// openai-go's own back-off: 0.5 s less up to 25 % of jitter.
		{"500", http.StatusInternalServerError, [2]string{}, 375 * time.Millisecond, 3 * time.Second},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(tc.name+"/"+faultMode(stream), func(t *testing.T) {
				t.Parallel()
				var failed, retried atomic.Int64 // unix nanos
				srv := newServer(t)
				srv.Reply(
					robbytest.Handler(func(w http.ResponseWriter, _ *http.Request) {
						failed.Store(time.Now().UnixNano())
						if tc.header[0] != "" {
							w.Header().Set(tc.header[0], tc.header[1])
						}
						w.Header().Set("Content-Type", "application/json")
						w.WriteHeader(tc.status)
						io.WriteString(w, `{"error":{"message":"try again later"}}`)
					}),
					robbytest.Handler(func(w http.ResponseWriter, r *http.Request) {
						retried.Store(time.Now().UnixNano())
						robbytest.Text("recovered").ServeHTTP(w, r)
					}),
				)
				a := faultAgent(t, srv)
				start := time.Now()
				res, _, err := faultAsk(t.Context(), a, stream, "hi")
				elapsed := time.Since(start)
				require.NoError(t, err)
				assert.Equal(t, "recovered", res.Text)
				reqs := srv.Requests()
				require.Len(t, reqs, 2, "retried exactly once")
				assert.Equal(t, "1", reqs[1].Header.Get("X-Stainless-Retry-Count"))
				assert.Equal(t, string(reqs[0].Body), string(reqs[1].Body), "the body sent again whole")
				wait := time.Duration(retried.Load() - failed.Load())
				t.Logf("%s/%s: retried once after %v, %v in all", tc.name, faultMode(stream), wait.Round(time.Millisecond), elapsed.Round(time.Millisecond))
				assert.GreaterOrEqual(t, wait, tc.min)
				assert.Less(t, wait, tc.max)
				msgs := a.Messages()
				assert.Len(t, msgs, 2, "the prompt and the answer, once each")
				checkConsistent(t, msgs)
			})
		}
	}
}

// TestFaultModelUnavailable answers 503 to every attempt: the run ends with
// the provider's status and message once openai-go has made its three
// attempts, or at the caller's deadline if that comes first.
func TestFaultModelUnavailable(t *testing.T) {
	unavailable := func(attempts *atomic.Int32) robbytest.Reply {
		return robbytest.Handler(func(w http.ResponseWriter, r *http.Request) {
			attempts.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":{"message":"model overloaded"}}`)
		})
	}
	for _, stream := range []bool{false, true} {
		t.Run("default retries/"+faultMode(stream), func(t *testing.T) {
			t.Parallel()
			var attempts atomic.Int32
			srv := newServer(t)
			for range 5 {
				srv.Reply(unavailable(&attempts))
			}
			a := faultAgent(t, srv, WithSystem("sys"))
			before := a.Messages()
			start := time.Now()
			_, _, err := faultAsk(t.Context(), a, stream, "hi")
			elapsed := time.Since(start)
			require.Error(t, err)
			t.Logf("%s: %d attempts, %v: %v", faultMode(stream), attempts.Load(), elapsed.Round(time.Millisecond), err)
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, http.StatusServiceUnavailable, apiErr.StatusCode)
			assert.Equal(t, "model overloaded", apiErr.Message)
			assert.EqualValues(t, 3, attempts.Load(), "openai-go makes 3 attempts by default")
			assert.Equal(t, 2, srv.Pending())
			// Back-offs of 0.5 s and 1 s, less up to 25 % of jitter each.
			assert.GreaterOrEqual(t, elapsed, 1125*time.Millisecond)
			assert.Less(t, elapsed, 5*time.Second)
			faultUnchanged(t, a, before)
		})
	}
	t.Run("caller deadline", func(t *testing.T) {
		t.Parallel()
		var attempts atomic.Int32
		srv := newServer(t)
		for range 5 {
			srv.Reply(unavailable(&attempts))
		}
		a := faultAgent(t, srv)
		start := time.Now() // before the deadline is set, which counts from its setting
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		_, err := a.Run(ctx, "hi")
		elapsed := time.Since(start)
		t.Logf("deadline 300ms: returned after %v, %d attempts: %v", elapsed.Round(time.Millisecond), attempts.Load(), err)
		require.ErrorIs(t, err, context.DeadlineExceeded, "the deadline ends the wait between attempts")
		assert.GreaterOrEqual(t, elapsed, 300*time.Millisecond)
		assert.Less(t, elapsed, 2*time.Second)
		assert.LessOrEqual(t, attempts.Load(), int32(2))
		assert.Empty(t, a.Messages())
	})
}

// TestFaultModelStalls has the endpoint stop sending, before the headers or
// after the first chunk, until the request is cancelled: the caller's
// deadline bounds the run, and the request is cancelled at the endpoint.
func TestFaultModelStalls(t *testing.T) {
	const deadline = 100 * time.Millisecond
	cases := []struct {
		name   string
		stream bool
		first  string // what the endpoint sends before it stalls
	}{
		{"no bytes/plain", false, ""},
		{"no bytes/stream", true, ""},
		{"after the first chunk/stream", true, "hello "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sawCancel atomic.Bool
			srv := newServer(t)
			srv.Reply(robbytest.Handler(func(w http.ResponseWriter, r *http.Request) {
				if tc.first != "" {
					w.Header().Set("Content-Type", "text/event-stream")
					w.WriteHeader(http.StatusOK)
					io.WriteString(w, faultChunk(tc.first))
					w.(http.Flusher).Flush()
				}
				select {
				case <-r.Context().Done():
					sawCancel.Store(true)
				case <-time.After(10 * time.Second):
				}
			}))
			a := faultAgent(t, srv, WithSystem("sys"))
			before := a.Messages()
			start := time.Now() // before the deadline is set, which counts from its setting
			ctx, cancel := context.WithTimeout(t.Context(), deadline)
			defer cancel()
			res, _, err := faultAsk(ctx, a, tc.stream, "hi")
			elapsed := time.Since(start)
			t.Logf("%s: returned after %v with a %v deadline: %v", tc.name, elapsed.Round(time.Millisecond), deadline, err)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			assert.GreaterOrEqual(t, elapsed, deadline)
			assert.Less(t, elapsed, 2*time.Second)
			assert.Equal(t, tc.first, res.Text, "the text received before the stall is kept")
			assert.Eventually(t, sawCancel.Load, 10*time.Second, 5*time.Millisecond, "the endpoint never saw the request cancelled")
			assert.Len(t, srv.Requests(), 1, "no retry after the caller's deadline")
			faultUnchanged(t, a, before)
			faultRecovers(t, a, srv, tc.stream)
		})
	}
}

// TestFaultModelGarbage answers 200 with a body that is not what was asked
// for: garbage events, garbage JSON, an HTML page, an empty body.
func TestFaultModelGarbage(t *testing.T) {
	cases := []struct {
		name        string
		stream      bool
		contentType string
		body        string
		is          error // nil: any error with "robby:" at most once
	}{
		{"sse/data not JSON", true, "text/event-stream", "data: {this is not json}\n\n", nil},
		{"sse/not SSE at all", true, "text/event-stream", "<html><body>502 Bad Gateway</body></html>\n", ErrIncompleteStream},
		{"sse/binary", true, "text/event-stream", "\x00\x01\xff\xfe garbage \x7f\n\n", ErrIncompleteStream},
		{"sse/empty body", true, "text/event-stream", "", ErrIncompleteStream},
		{"sse/DONE only", true, "text/event-stream", "data: [DONE]\n\n", ErrIncompleteStream},
		{"sse/plain JSON reply instead", true, "application/json", `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`, ErrIncompleteStream},
		{"json/not JSON", false, "application/json", "{this is not json", nil},
		{"json/HTML page", false, "application/json", "<html><body>502 Bad Gateway</body></html>", nil},
		{"json/HTML page as text/html", false, "text/html", "<html><body>502 Bad Gateway</body></html>", nil},
		{"json/empty body", false, "application/json", "", nil},
		{"json/empty object", false, "application/json", "{}", ErrNoChoices},
		{"json/wrong shape", false, "application/json", `[1,2,3]`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t)
			srv.Reply(robbytest.Handler(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, tc.body)
			}))
			a := faultAgent(t, srv, WithSystem("sys"))
			before := a.Messages()
			start := time.Now()
			res, _, err := faultAsk(t.Context(), a, tc.stream, "hi")
			elapsed := time.Since(start)
			t.Logf("%s: after %v: %v (text %q)", tc.name, elapsed.Round(time.Millisecond), err, res.Text)
			require.Error(t, err, "a garbage reply was taken for an answer: %q", res.Text)
			assert.LessOrEqual(t, strings.Count(err.Error(), "robby:"), 1, err.Error())
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			if tc.name == "sse/plain JSON reply instead" {
				assert.ErrorContains(t, err, `no chunk came (Content-Type "application/json")`)
			}
			assert.Less(t, elapsed, 2*time.Second)
			assert.Len(t, srv.Requests(), 1, "a 200 is not retried")
			faultUnchanged(t, a, before)
			faultRecovers(t, a, srv, tc.stream)
		})
	}
}

// --- Tools ---

// TestFaultToolPanics panics in two tools of a streamed turn, with a value
// and with a runtime error. TestEveryCallGetsOneToolMessage covers a panic
// in Run.
func TestFaultToolPanics(t *testing.T) {
	boom := FuncTool("boom", "", nil, func(context.Context, map[string]any) (any, error) {
		panic("boom")
	})
	nilMap := FuncTool("nil_map", "", nil, func(context.Context, map[string]any) (any, error) {
		var m map[string]int
		m["x"] = 1 //lint:ignore SA5000 the runtime panic is the point
		return nil, nil
	})
	srv := newServer(t)
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("boom", `{}`), robbytest.Call("nil_map", `{}`), robbytest.Call("add", `{"a":1,"b":2}`)),
		robbytest.Text("still here"),
	)
	a := newTestAgent(t, srv, WithTools(boom, nilMap, addTool))
	res, _, err := faultAsk(t.Context(), a, true, "go")
	require.NoError(t, err)
	assert.Equal(t, "still here", res.Text)
	require.Len(t, res.ToolCalls, 3)
	assert.ErrorIs(t, res.ToolCalls[0].Err, ErrToolPanic)
	assert.Equal(t, `Error: tool "boom": robby: tool panicked: boom`, res.ToolCalls[0].Output)
	assert.ErrorIs(t, res.ToolCalls[1].Err, ErrToolPanic)
	assert.Contains(t, res.ToolCalls[1].Output, "assignment to entry in nil map")
	assert.Equal(t, "3", res.ToolCalls[2].Output, "the other call of the turn is kept")
	t.Logf("panics read by the model: %q, %q", res.ToolCalls[0].Output, res.ToolCalls[1].Output)
	tools := toolMessagesOf(srv.Requests()[1])
	assert.Equal(t, []string{res.ToolCalls[0].Output, res.ToolCalls[1].Output, "3"}, tools)
	checkConsistent(t, a.Messages())
}

// TestFaultApprovalCallbackPanics panics in the WithApproval callback,
// which is user code run for each call as a tool is. It runs the scenario
// in a child process, since an unrecovered panic in a goroutine ends the
// whole program.
func TestFaultApprovalCallbackPanics(t *testing.T) {
	if os.Getenv("ROBBY_FAULT_CHILD") == t.Name() {
		srv := newServer(t)
		srv.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`), robbytest.Call("add", `{"a":2,"b":2}`)),
			robbytest.Text("done"))
		a := newTestAgent(t, srv, WithTools(addTool), WithApproval(func(_ context.Context, c ToolCall) error {
			if strings.Contains(c.Arguments, `"a":2`) {
				panic("approval service crashed")
			}
			return nil
		}))
		res, err := a.Run(t.Context(), "go")
		require.NoError(t, err)
		require.Len(t, res.ToolCalls, 2)
		assert.Equal(t, "3", res.ToolCalls[0].Output)
		assert.ErrorIs(t, res.ToolCalls[1].Err, ErrToolPanic)
		checkConsistent(t, a.Messages())
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "ROBBY_FAULT_CHILD="+t.Name())
	out, err := cmd.CombinedOutput()
	lines := strings.Split(string(out), "\n")
	head := strings.Join(lines[:min(len(lines), 12)], "\n")
	switch {
	case strings.Contains(string(out), "panic: approval service crashed"):
		t.Errorf("a panic in the WithApproval callback was not recovered: the program died (%v):\n%s", err, head)
	case err != nil:
		t.Errorf("the scenario failed (%v):\n%s", err, out)
	}
}

// TestFaultToolHangsIgnoringItsContext runs a tool that ignores its context
// next to one that answers: the hung call is abandoned at WithToolTimeout,
// the other's result is kept, and the run goes on. Its goroutine ends when
// the tool returns at last, and its late result goes nowhere.
// TestToolIgnoringItsContextIsAbandoned covers a lone hung tool in Run.
func TestFaultToolHangsIgnoringItsContext(t *testing.T) {
	const timeout = 100 * time.Millisecond
	release, returned := make(chan struct{}), make(chan struct{})
	var (
		once    sync.Once
		started atomic.Bool
	)
	unblock := func() { once.Do(func() { close(release) }) }
	stuck := FuncTool("stuck", "", nil, func(context.Context, map[string]any) (any, error) {
		started.Store(true)
		defer close(returned)
		<-release
		return "late", nil
	})
	t.Cleanup(func() {
		unblock()
		if started.Load() {
			<-returned
		}
	})
	srv := newServer(t)
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("stuck", `{}`), robbytest.Call("add", `{"a":1,"b":2}`)),
		robbytest.Text("moved on"),
	)
	a := newTestAgent(t, srv, WithTools(stuck, addTool), WithToolTimeout(timeout))
	start := time.Now()
	res, _, err := faultAsk(t.Context(), a, true, "go")
	elapsed := time.Since(start)
	require.NoError(t, err)
	t.Logf("run with a hung tool (timeout %v): %v; hung call's result %v after %v", timeout, elapsed.Round(time.Millisecond),
		res.ToolCalls[0].Err, res.ToolCalls[0].Duration.Round(time.Millisecond))
	assert.Equal(t, "moved on", res.Text)
	assert.GreaterOrEqual(t, elapsed, timeout)
	assert.Less(t, elapsed, 2*time.Second)
	assert.ErrorIs(t, res.ToolCalls[0].Err, context.DeadlineExceeded)
	assert.Contains(t, res.ToolCalls[0].Output, "timed out after 100ms")
	assert.Less(t, res.ToolCalls[0].Duration, time.Second)
	assert.Equal(t, "3", res.ToolCalls[1].Output)

	// The agent goes on while the tool is still stuck.
	srv.Reply(robbytest.Text("next"))
	res, err = a.Run(t.Context(), "next")
	require.NoError(t, err)
	assert.Equal(t, "next", res.Text)
	msgs := a.Messages()

	unblock()
	<-returned
	time.Sleep(20 * time.Millisecond) // for a late result to land, if it could
	assert.Equal(t, marshal(t, msgs), marshal(t, a.Messages()), "the late result changed the conversation")
	assert.NotContains(t, marshal(t, a.Messages()), "late")
	checkConsistent(t, a.Messages())
}

// TestFaultToolHugeResult returns 10 MiB from a tool: the model reads the
// first 64 KiB (DefaultMaxToolOutput) and a note. TestToolOutputIsMadeToFit
// covers a smaller limit with multi-byte characters.
func TestFaultToolHugeResult(t *testing.T) {
	const size = 10 << 20
	huge := FuncTool("huge", "", nil, func(context.Context, map[string]any) (any, error) {
		return strings.Repeat("x", size), nil
	})
	srv := newServer(t)
	srv.Reply(robbytest.ToolCalls(robbytest.Call("huge", `{}`)), robbytest.Text("read it"))
	a := newTestAgent(t, srv, WithTools(huge))
	start := time.Now()
	res, err := a.Run(t.Context(), "go")
	elapsed := time.Since(start)
	require.NoError(t, err)
	out := res.ToolCalls[0].Output
	note := fmt.Sprintf("\n[robby: output truncated: the first %d of %d bytes are shown]", DefaultMaxToolOutput, size)
	assert.Equal(t, strings.Repeat("x", DefaultMaxToolOutput)+note, out)
	body := srv.Requests()[1].Body
	t.Logf("10 MiB result: %d bytes kept, next request %d bytes, run %v", len(out), len(body), elapsed.Round(time.Millisecond))
	assert.Less(t, len(body), DefaultMaxToolOutput+4096, "the next request carries the cut output only")
	assert.Equal(t, []string{out}, toolMessagesOf(srv.Requests()[1]))
	checkConsistent(t, a.Messages())
}

// TestFaultToolInvalidUTF8 returns bytes that are not UTF-8, in a result
// and in an error: the model reads U+FFFD in their place, in a request
// that is valid JSON. TestToolOutputIsMadeToFit covers a result.
func TestFaultToolInvalidUTF8(t *testing.T) {
	latin1 := FuncTool("latin1", "", nil, func(context.Context, map[string]any) (any, error) {
		return "caf\xe9 cr\xe8me \xc3", nil
	})
	failing := FuncTool("failing", "", nil, func(context.Context, map[string]any) (any, error) {
		return nil, errors.New("no such file: r\xe9sum\xe9.txt")
	})
	srv := newServer(t)
	srv.Reply(robbytest.ToolCalls(robbytest.Call("latin1", `{}`), robbytest.Call("failing", `{}`)), robbytest.Text("ok"))
	a := newTestAgent(t, srv, WithTools(latin1, failing))
	res, err := a.Run(t.Context(), "go")
	require.NoError(t, err)
	assert.Equal(t, "caf\uFFFD cr\uFFFDme \uFFFD", res.ToolCalls[0].Output)
	for _, r := range res.ToolCalls {
		// WithMaxToolOutput: "The ToolResult keeps what the model read."
		assert.True(t, utf8.ValidString(r.Output), "invalid UTF-8 kept in the ToolResult: %q", r.Output)
	}
	for _, m := range a.Messages() {
		if m.OfTool != nil {
			assert.True(t, utf8.ValidString(m.OfTool.Content.OfString.Value), "invalid UTF-8 kept in the conversation: %q", m.OfTool.Content.OfString.Value)
		}
	}
	assert.Contains(t, res.ToolCalls[1].Output, "no such file: r\uFFFDsum\uFFFD.txt")
	req := srv.Requests()[1]
	assert.True(t, json.Valid(req.Body), "the next request is not valid JSON")
	assert.True(t, utf8.Valid(req.Body), "the next request is not valid UTF-8")
	assert.Equal(t, []string{"caf\uFFFD cr\uFFFDme \uFFFD", "Error: tool \"failing\": no such file: r\uFFFDsum\uFFFD.txt"}, toolMessagesOf(req))
	checkConsistent(t, a.Messages())
}

// TestFaultToolHugeError fails a tool with a 256 KiB error message, as a
// tool that puts a whole log in its error would, and an MCP server with a
// 256 KiB isError result: the model should read no more of an error than
// of a result (64 KiB by default).
func TestFaultToolHugeError(t *testing.T) {
	const size = 256 << 10
	local := FuncTool("local_fail", "", nil, func(context.Context, map[string]any) (any, error) {
		return nil, errors.New(strings.Repeat("e", size))
	})
	server := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "v0"}, nil)
	server.AddTool(&mcp.Tool{Name: "mcp_fail", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("m", size)}}}, nil
		})
	srv := newServer(t)
	srv.Reply(robbytest.ToolCalls(robbytest.Call("local_fail", `{}`), robbytest.Call("mcp_fail", `{}`)), robbytest.Text("ok"))
	a := newTestAgent(t, srv, WithTools(local), WithMCP(inMemory(t, "big", server)))
	res, err := a.Run(t.Context(), "go")
	require.NoError(t, err)
	require.Len(t, res.ToolCalls, 2)
	for _, r := range res.ToolCalls {
		assert.Error(t, r.Err)
		t.Logf("%s: the model reads %d bytes of a %d-byte error", r.Call.Name, len(r.Output), size)
		assert.Less(t, len(r.Output), DefaultMaxToolOutput+200, "%s: the error is not cut to WithMaxToolOutput", r.Call.Name)
	}
	body := srv.Requests()[1].Body
	t.Logf("next request: %d bytes", len(body))
	assert.Less(t, len(body), 2*DefaultMaxToolOutput+4096)
	checkConsistent(t, a.Messages())
}

// --- MCP servers ---

// TestFaultMCPServerKilledMidCall kills the stdio server (this test binary,
// see selfServer) while its hang tool runs: the call fails at once with an
// error naming the server, the next call runs on a restarted server, and
// Close leaves no process. TestMCPIntegrationServerKilledMidCall does the
// same with node's server-everything, and a second death.
func TestFaultMCPServerKilledMidCall(t *testing.T) {
	before := childProcesses(t)
	srv := newServer(t)
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("hang", `{}`)),
		robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)),
		robbytest.Text("done"),
	)
	a := newTestAgent(t, srv, WithMCP(selfServer("self").WithGracePeriod(500*time.Millisecond)), WithToolTimeout(10*time.Second))
	first := faultNewChild(t, before)

	// When the model asks for hang, the killer waits for the server to
	// read the tools/call request, then kills it.
	calling := make(chan int64, 1) // the bytes the server had read before
	killed := make(chan time.Time, 1)
	var killErr error
	go func() {
		defer close(killed)
		read, ok := <-calling
		if !ok {
			return
		}
		deadline := time.Now().Add(5 * time.Second)
		for faultReadBytes(first) == read && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // let it start the call
		at := time.Now()
		if killErr = syscall.Kill(first, syscall.SIGKILL); killErr == nil {
			killed <- at
		}
	}()
	var (
		res      *Result
		err      error
		failedAt time.Time
		asked    bool
	)
	for ev, e := range a.Stream(t.Context(), "go") {
		switch {
		case ev.Kind == EventToolCall && ev.Turn == 1:
			calling <- faultReadBytes(first) // before the call is sent
			asked = true
			close(calling)
		case ev.Kind == EventToolResult && ev.Turn == 1:
			failedAt = time.Now()
		case ev.Kind == EventDone:
			res, err = ev.Result, e
		}
	}
	if !asked {
		close(calling)
	}
	at, ok := <-killed
	require.True(t, ok, "the server was not killed: %v", killErr)
	require.NoError(t, err)
	require.Len(t, res.ToolCalls, 2)
	hung := res.ToolCalls[0]
	t.Logf("killed mid-call: the call failed %v after the kill (%v in all): %s", failedAt.Sub(at).Round(time.Millisecond),
		hung.Duration.Round(time.Millisecond), strings.ReplaceAll(hung.Output, "\n", " | "))
	assert.Less(t, failedAt.Sub(at), 2*time.Second, "the call outlived the server")
	require.Error(t, hung.Err)
	assert.Less(t, hung.Duration, 3*time.Second, "the call waited for more than the server's death")
	assert.True(t, strings.HasPrefix(hung.Output, "Error: "), hung.Output)
	assert.Contains(t, hung.Output, `MCP server "self"`)
	assert.Equal(t, `{"sum":3}`, res.ToolCalls[1].Output, "the next call runs on a restarted server")
	second := faultNewChild(t, before)
	assert.NotEqual(t, first, second)
	checkConsistent(t, a.Messages())

	require.NoError(t, a.Close())
	assertNoNewChildren(t, before)
	ok, state := procState(first)
	assert.False(t, ok && state == "Z", "the killed server is a zombie")
}

// faultNewChild returns the one child process not in before.
func faultNewChild(t *testing.T, before map[int]string) int {
	t.Helper()
	var pids []int
	for pid, state := range childProcesses(t) {
		if _, ok := before[pid]; !ok && state != "Z" {
			pids = append(pids, pid)
		}
	}
	require.Len(t, pids, 1, "new child processes")
	return pids[0]
}

// faultReadBytes returns how many bytes a process has read (rchar in
// /proc/PID/io), or -1.
func faultReadBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return -1
}

// faultPipeServer is an MCP server played by the test over a pair of pipes,
// newline-delimited JSON-RPC as over stdio. It answers initialize and
// tools/list as a server would, unless answer (called for every request)
// returns a line to send instead; an answer of "-" sends nothing.
func faultPipeServer(t *testing.T, answer func(method string, id json.RawMessage) string) mcp.Transport {
	t.Helper()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer serverOut.Close()
		sc := bufio.NewScanner(serverIn)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					ProtocolVersion string `json:"protocolVersion"`
				} `json:"params"`
			}
			if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.ID == nil || msg.Method == "" {
				continue // a notification or a response
			}
			line := answer(msg.Method, msg.ID)
			switch {
			case line == "-":
				continue
			case line != "":
			case msg.Method == "initialize":
				line = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"pipe","version":"v0"}}}`,
					msg.ID, msg.Params.ProtocolVersion)
			case msg.Method == "tools/list":
				line = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}`, msg.ID)
			default:
				line = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no %s here"}}`, msg.ID, msg.Method)
			}
			if _, err := io.WriteString(serverOut, line+"\n"); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		serverIn.Close()
		serverOut.Close()
		clientIn.Close()
		clientOut.Close()
		<-done
	})
	return &mcp.IOTransport{Reader: clientIn, Writer: clientOut}
}

// TestFaultMCPMalformedMessages has a server send what is not JSON-RPC,
// while connecting or in answer to a call: New or the call fails with an
// error naming the server, in bounded time, and nothing is left running.
// TestMCPIntegrationServerNeverInitializes covers a node server that never
// answers initialize; "silent" here is the same without node.
func TestFaultMCPMalformedMessages(t *testing.T) {
	t.Run("connect", func(t *testing.T) {
		cases := []struct {
			name   string
			server func(t *testing.T) MCPServer
			want   string
		}{
			{"stdio garbage line", func(*testing.T) MCPServer {
				return MCPCommand("garbage", "/bin/sh", "-c", "echo 'this is not JSON-RPC'; exec sleep 30")
			}, `MCP server "garbage"`},
			{"stdio binary", func(*testing.T) MCPServer {
				return MCPCommand("garbage", "/bin/sh", "-c", `printf '\000\377\376{"jsonrpc":\n'; exec sleep 30`)
			}, `MCP server "garbage"`},
			{"stdio silent", func(*testing.T) MCPServer {
				return MCPCommand("silent", "/bin/sh", "-c", "exec sleep 30")
			}, `MCP server "silent"`},
			{"initialize answered with garbage", func(t *testing.T) MCPServer {
				return MCPTransport("pipe", faultPipeServer(t, func(method string, _ json.RawMessage) string {
					if method == "initialize" {
						return "\x00\xff garbage {"
					}
					return ""
				}))
			}, `MCP server "pipe"`},
			{"initialize answered with JSON that is not JSON-RPC", func(t *testing.T) MCPServer {
				return MCPTransport("pipe", faultPipeServer(t, func(method string, _ json.RawMessage) string {
					if method == "initialize" {
						return `{"hello":"world"}`
					}
					return ""
				}))
			}, `MCP server "pipe"`},
			{"initialize result of the wrong shape", func(t *testing.T) MCPServer {
				return MCPTransport("pipe", faultPipeServer(t, func(method string, id json.RawMessage) string {
					if method == "initialize" {
						return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":"ready"}`, id)
					}
					return ""
				}))
			}, `MCP server "pipe"`},
			{"tools/list answered with garbage", func(t *testing.T) MCPServer {
				return MCPTransport("pipe", faultPipeServer(t, func(method string, _ json.RawMessage) string {
					if method == "tools/list" {
						return "<html>oops</html>"
					}
					return ""
				}))
			}, `MCP server "pipe"`},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				leaks := goleak.IgnoreCurrent()
				before := childProcesses(t)
				const timeout = time.Second
				spec := tc.server(t).WithConnectTimeout(timeout).WithGracePeriod(200 * time.Millisecond)
				start := time.Now()
				a, err := New(WithModel("m"), WithMCP(spec))
				elapsed := time.Since(start)
				require.Error(t, err)
				assert.Nil(t, a)
				t.Logf("%s: New failed after %v: %s", tc.name, elapsed.Round(time.Millisecond), strings.ReplaceAll(err.Error(), "\n", " | "))
				assert.Contains(t, err.Error(), tc.want)
				assert.Less(t, elapsed, timeout+2*time.Second)
				assertNoNewChildren(t, before)
				// The test's own pipe server ends at cleanup, when it
				// reads the end of its input.
				goleak.VerifyNone(t, leaks, goleak.IgnoreAnyFunction("github.com/robby-go/robby.faultPipeServer.func1"))
			})
		}
	})
	t.Run("call", func(t *testing.T) {
		cases := []struct {
			name   string
			answer string // the line sent in answer to tools/call; %s is the request's id
			want   string
		}{
			{"garbage", "\x00\xff garbage {", `MCP server "pipe"`},
			{"JSON that is not JSON-RPC", `{"hello":"world"}`, `MCP server "pipe"`},
			{"result of the wrong shape", `{"jsonrpc":"2.0","id":%s,"result":[1,2,3]}`, `MCP server "pipe"`},
			{"answer to another id", `{"jsonrpc":"2.0","id":999,"result":{"content":[{"type":"text","text":"not yours"}]}}`, "timed out after 300ms"},
			{"no answer", "-", "timed out after 300ms"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				transport := faultPipeServer(t, func(method string, id json.RawMessage) string {
					if method != "tools/call" {
						return ""
					}
					if strings.Contains(tc.answer, "%s") {
						return fmt.Sprintf(tc.answer, id)
					}
					return tc.answer
				})
				srv := newServer(t)
				srv.Reply(
					robbytest.ToolCalls(robbytest.Call("echo", `{}`)),
					robbytest.ToolCalls(robbytest.Call("echo", `{}`)),
					robbytest.Text("done"),
				)
				a := newTestAgent(t, srv, WithMCP(MCPTransport("pipe", transport)), WithToolTimeout(300*time.Millisecond))
				start := time.Now()
				res, err := a.Run(t.Context(), "go")
				elapsed := time.Since(start)
				require.NoError(t, err, "a broken server is the tool's failure, not the run's")
				require.Len(t, res.ToolCalls, 2)
				first, second := res.ToolCalls[0], res.ToolCalls[1]
				t.Logf("%s: call failed after %v: %s; next call: %s; run %v", tc.name, first.Duration.Round(time.Millisecond),
					strings.ReplaceAll(first.Output, "\n", " | "), strings.ReplaceAll(second.Output, "\n", " | "), elapsed.Round(time.Millisecond))
				require.Error(t, first.Err)
				assert.Contains(t, first.Output, tc.want)
				assert.Less(t, first.Duration, 2*time.Second)
				require.Error(t, second.Err, "the server answers every call this way")
				assert.Less(t, second.Duration, 2*time.Second)
				assert.Less(t, elapsed, 4*time.Second)
				checkConsistent(t, a.Messages())
				require.NoError(t, a.Close())
			})
		}
	})
}
