package robby

//lint:file-ignore SA1019 the test servers log as servers of protocols before 2026-07-28 do.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// echoServer is an MCP server whose tool "echo" waits until both of its
// calls have arrived, then reports progress and logs the name it was
// given, and returns once release is closed.
func echoServer(arrived *sync.WaitGroup, release <-chan struct{}) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "v0"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"who":{"type":"string"}}}`)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Who string }
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		arrived.Done()
		arrived.Wait() // both calls are in flight
		req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1, Message: in.Who})
		req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "log of " + in.Who})
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Who}}}, nil
	})
	return s
}

// echoModel calls tool with the prompt as "who", then answers "done".
func echoModel(tool string) robbytest.Reply {
	return robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "tool" {
			return robbytest.Text("done")
		}
		return robbytest.ToolCalls(robbytest.Call(tool, fmt.Sprintf(`{"who":%q}`, last.Content)))
	})
}

// logRecorder is a slog.Handler that keeps the "message" attribute of the
// records of each message. It is safe for concurrent use.
type logRecorder struct {
	mu  sync.Mutex
	got map[string][]string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }

func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "message" {
			if r.got == nil {
				r.got = map[string][]string{}
			}
			r.got[rec.Message] = append(r.got[rec.Message], a.Value.String())
		}
		return true
	})
	return nil
}

func (r *logRecorder) messages(msg string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got[msg]...)
}

// TestMCPLogsReachOnlyTheirConversation streams two clones of one agent at
// once, each calling the same streamable HTTP server's tool, which logs its
// argument while both calls are in flight: each stream sees its own call's
// progress and log message, not the other's.
func TestMCPLogsReachOnlyTheirConversation(t *testing.T) {
	var arrived sync.WaitGroup
	arrived.Add(2)
	release := make(chan struct{})
	server := echoServer(&arrived, release)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(hs.Close)
	srv := newServer(t)
	srv.Fallback(echoModel("echo"))
	logs := new(logRecorder)
	a := newTestAgent(t, srv, WithLogger(slog.New(logs)), WithMCP(MCPStreamableHTTP("echo", hs.URL)))

	who := []string{"alice", "bob"}
	notices := make([][]Notice, len(who))
	heard := make(chan struct{}, len(who)) // a stream has its call's progress and log message
	var streams sync.WaitGroup
	for i, name := range who {
		clone := a.Clone()
		streams.Go(func() {
			own := 0
			for ev, err := range clone.Stream(t.Context(), name) {
				if !assert.NoError(t, err) {
					break
				}
				if ev.Notice == nil {
					continue
				}
				notices[i] = append(notices[i], *ev.Notice)
				if ev.Notice.Message == name || ev.Notice.Message == "log of "+name {
					if own++; own == 2 {
						heard <- struct{}{}
					}
				}
			}
			if own < 2 {
				heard <- struct{}{}
			}
		})
	}
	for range who {
		select {
		case <-heard:
		case <-time.After(time.Minute): // not a timing check: a broken build must not hang the suite
			t.Error("a stream never saw its own call's notices")
		}
	}
	close(release)
	streams.Wait()
	for i, name := range who {
		assert.ElementsMatch(t, []Notice{
			{Server: "echo", Tool: "echo", Message: name, Progress: 1},
			{Server: "echo", Tool: "echo", Level: "info", Message: "log of " + name},
		}, notices[i], "the notices in the stream of %s", name)
	}
	assert.ElementsMatch(t, []string{"log of alice", "log of bob"}, logs.messages("robby: MCP server log"),
		"the logger has every log message")
}

// TestMCPNotificationsBecomeEvents streams a call of a tool that reports
// progress and logs a message, over each kind of transport: progress
// reaches the stream by its token everywhere; the log message reaches it
// over streamable HTTP, which answers the call with a stream of its own,
// and goes to the logger only where the wire cannot say which call it
// belongs to, even when the server names the call's progress token.
func TestMCPNotificationsBecomeEvents(t *testing.T) {
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newMCPTestServer() }, nil))
	t.Cleanup(hs.Close)
	impostor := newMCPTestServer()
	impostor.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			token := req.Params.GetProgressToken()
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: 1, Total: 2, Message: "step"})
			req.Session.Log(ctx, &mcp.LoggingMessageParams{Meta: mcp.Meta{"progressToken": token}, Level: "info", Data: "halfway"})
			time.Sleep(50 * time.Millisecond) // as the test server's "slow"
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slow done"}}}, nil
		})
	halfway := Notice{Server: "test", Tool: "slow", Level: "info", Message: "halfway"}
	for _, tc := range []struct {
		name   string
		server MCPServer
		logs   []Notice
	}{
		{"streamable HTTP", MCPStreamableHTTP("test", hs.URL), []Notice{halfway}},
		{"stdio", selfServer("test"), nil},
		{"in memory", inMemory(t, "test", newMCPTestServer()), nil},
		{"in memory, the log naming the call's progress token", inMemory(t, "test", impostor), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t)
			srv.Reply(robbytest.ToolCalls(robbytest.Call("slow", `{}`)), robbytest.Text("done"))
			logger := new(logRecorder)
			a := newTestAgent(t, srv, WithLogger(slog.New(logger)), WithMCP(tc.server))
			var progress, logs []Notice
			for ev, err := range a.Stream(t.Context(), "go") {
				require.NoError(t, err)
				switch ev.Kind {
				case EventProgress:
					progress = append(progress, *ev.Notice)
				case EventLog:
					logs = append(logs, *ev.Notice)
				}
			}
			require.NotEmpty(t, progress)
			assert.Equal(t, Notice{Server: "test", Tool: "slow", Message: "step", Progress: 1, Total: 2}, progress[0])
			assert.Equal(t, tc.logs, logs)
			require.NoError(t, a.Close()) // the session's notifications are handled
			assert.Equal(t, []string{"halfway"}, logger.messages("robby: MCP server log"))
		})
	}
}

// taker returns a notice function for a noticeReader that takes the data
// of progress notices and log messages, and what it took.
func taker() (func([]byte) bool, *[]string) {
	var taken []string
	return func(data []byte) bool {
		if !bytes.Contains(data, []byte(`"notifications/`)) {
			return false // as robby's
		}
		msg, err := jsonrpc.DecodeMessage(data)
		req, ok := msg.(*jsonrpc.Request)
		if err != nil || !ok || req.IsCall() || (req.Method != "notifications/message" && req.Method != "notifications/progress") {
			return false
		}
		taken = append(taken, string(data))
		return true
	}, &taken
}

// TestNoticeReaderTakesOnlyNotices passes event streams through the
// reader, whole and a byte at a time: progress notices and log messages
// are taken, their events passing on without their data; every other
// event passes byte for byte.
func TestNoticeReaderTakesOnlyNotices(t *testing.T) {
	log := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`
	progress := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"robby-1","progress":1}}`
	long := strings.Replace(log, `"hi"`, `"`+strings.Repeat("é", 100<<10)+`"`, 1) // 200 KiB: longer than the read buffer
	huge := strings.Replace(log, `"hi"`, `"`+strings.Repeat("x", maxHeldEvent)+`"`, 1)
	for _, tc := range []struct {
		name, in, out string
		taken         []string
	}{
		{"log message", "data: " + log + "\n\n", "\n", []string{log}},
		{"with a name and an id", "event: message\nid: 7\ndata: " + log + "\n\n", "event: message\nid: 7\n\n", []string{log}},
		{"in two data lines, CRLF",
			"id: 8\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\r\ndata: \"params\":{\"level\":\"info\",\"data\":\"hi\"}}\r\n\r\n",
			"id: 8\r\n\r\n",
			[]string{"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\n\"params\":{\"level\":\"info\",\"data\":\"hi\"}}"}},
		{"long", "data: " + long + "\n\n", "\n", []string{long}},
		{"at the end of the stream", "data: " + log, "\n", []string{log}},
		{"progress", "data: " + progress + "\n\n", "\n", []string{progress}},
		{"a result quoting a log message", "id: 9\ndata: " + `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"\"notifications/message\""}]}}` + "\n\n", "", nil},
		{"an event of another type", "event: other\ndata: " + log + "\n\n", "", nil},
		{"a priming event and a comment", "id: 0\ndata: \n\n: ping\n\n", "", nil},
		{"not JSON", "data: notifications/message {\n\n", "", nil},
		{"too large to hold", "data: " + huge + "\n\ndata: " + log + "\n\n", "data: " + huge + "\n\n\n", []string{log}},
	} {
		if tc.out == "" {
			tc.out = tc.in
		}
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				notice, taken := taker()
				got, err := io.ReadAll(newNoticeReader(io.NopCloser(r), notice))
				require.NoError(t, err)
				assert.True(t, string(got) == tc.out, "got %.300q", got)
				assert.Equal(t, tc.taken, *taken)
			}
		})
	}
}

// filler reads as an endless run of one byte.
type filler byte

func (f filler) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(f)
	}
	return len(p), nil
}

// TestNoticeReaderStreamsInBoundedMemory passes a large event, then 10,000
// log messages, through the reader: the large event passes unchanged
// without being held, so the memory allocated does not grow with it.
func TestNoticeReaderStreamsInBoundedMemory(t *testing.T) {
	small, large := passLargeEvent(t, 16<<20), passLargeEvent(t, 64<<20)
	t.Logf("allocated: %.2f MiB for 16 MiB, %.2f MiB for 64 MiB", float64(small)/(1<<20), float64(large)/(1<<20))
	assert.Less(t, large, uint64(8<<20), "the event is not held whole")
	assert.Less(t, int64(large)-int64(small), int64(1<<20), "memory does not grow with the event")
}

// passLargeEvent passes an event of size bytes, then 10,000 log messages,
// through the reader, and returns the bytes allocated while the event
// passed.
func passLargeEvent(t *testing.T, size int) uint64 {
	const logs = 10_000
	log := "data: " + `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}` + "\n\n"
	head, tail := `data: {"jsonrpc":"2.0","id":1,"result":{"text":"`, "\"}}\n\n"
	first := int64(len(head) + size + len(tail))
	stream := func() io.Reader {
		return io.MultiReader(strings.NewReader(head), io.LimitReader(filler('x'), int64(size)), strings.NewReader(tail),
			strings.NewReader(strings.Repeat(log, logs)))
	}
	want, got := sha256.New(), sha256.New()
	_, err := io.Copy(want, io.LimitReader(stream(), first))
	require.NoError(t, err)

	notice, taken := taker()
	reader := newNoticeReader(io.NopCloser(stream()), notice)
	buf := make([]byte, 32<<10)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n, err := io.CopyBuffer(got, io.LimitReader(reader, first), buf)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	assert.Equal(t, first, n)
	assert.Equal(t, want.Sum(nil), got.Sum(nil), "the large event passes unchanged")

	rest, err := io.ReadAll(reader)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("\n", logs), string(rest))
	assert.Len(t, *taken, logs, "every log message after it is taken")
	return after.TotalAlloc - before.TotalAlloc
}

// FuzzNoticeReader passes any stream through the reader, whole and a
// byte at a time: it never panics, what it takes and passes on does not
// depend on how the stream is split, and a stream without a notification
// passes byte for byte.
func FuzzNoticeReader(f *testing.F) {
	log := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`
	for _, seed := range []string{
		"data: " + log + "\n\n",
		"event: message\r\nid: 1\r\ndata: " + log + "\r\n\r\n: ping\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\ndata: \"params\":{\"_meta\":null,\"data\":1}}\n\n",
		"id: 0\ndata:\n\ndata: " + log,
		"event: x\ndata: " + log + "\n\nevent:message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		notice, taken := taker()
		whole, err := io.ReadAll(newNoticeReader(io.NopCloser(bytes.NewReader(in)), notice))
		require.NoError(t, err)
		notice, takenSplit := taker()
		split, err := io.ReadAll(newNoticeReader(io.NopCloser(iotest.OneByteReader(bytes.NewReader(in))), notice))
		require.NoError(t, err)
		require.Equal(t, whole, split, "the output depends on how the stream is split")
		require.Equal(t, *taken, *takenSplit, "what is taken depends on how the stream is split")
		if !bytes.Contains(in, []byte(`"notifications/`)) {
			require.Equal(t, in, whole, "a stream without a notification changed")
		}
	})
}

// burstNotices is how many progress notices, and log messages, the test
// server's tool "burst" sends before its result, which it returns at once.
const burstNotices = 20

// TestMCPNoticesComeBeforeTheirResult streams calls of a tool that sends
// its progress notices and log messages just before its result, over each
// kind of transport, again and again: every notice the wire ties to the
// call (progress by its token; over streamable HTTP, logs by the call's
// stream) is an event of the call, in the order sent, before its result.
func TestMCPNoticesComeBeforeTheirResult(t *testing.T) {
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newMCPTestServer() }, nil))
	t.Cleanup(hs.Close)
	for _, tc := range []struct {
		name   string
		server MCPServer
		logs   bool // the wire says which call a log message belongs to
	}{
		{"streamable HTTP", MCPStreamableHTTP("test", hs.URL), true},
		{"stdio", selfServer("test"), false},
		{"in memory", inMemory(t, "test", newMCPTestServer()), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t)
			srv.Fallback(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
				if req.Messages[len(req.Messages)-1].Role == "tool" {
					return robbytest.Text("done")
				}
				return robbytest.ToolCalls(robbytest.Call("burst", `{}`))
			}))
			a := newTestAgent(t, srv, WithMCP(tc.server))
			var want []string
			for i := 1; i <= burstNotices; i++ {
				want = append(want, fmt.Sprintf("progress %d", i))
				if tc.logs {
					want = append(want, fmt.Sprintf("log %d", i))
				}
			}
			want = append(want, "result")
			for range 10 {
				var got []string
				for ev, err := range a.Stream(t.Context(), "go") {
					require.NoError(t, err)
					switch ev.Kind {
					case EventProgress:
						got = append(got, fmt.Sprintf("progress %g", ev.Notice.Progress))
					case EventLog:
						got = append(got, "log "+ev.Notice.Message)
					case EventToolResult:
						got = append(got, "result")
					}
				}
				require.Equal(t, want, got, "the call's events")
			}
		})
	}
}
