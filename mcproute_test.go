package robby

//lint:file-ignore SA1019 the test servers log as servers of protocols before 2026-07-28 do.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// echoServer is an MCP server whose tool "echo" waits until both of its
// calls have arrived. Then it reports progress, logs the name it was
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
// once, each calling the same streamable HTTP server's tool. The tool logs
// its argument while both calls are in flight. Each stream sees its own
// call's progress and log message, not the other's.
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
// progress and logs a message, over each kind of transport. Progress
// reaches the stream by its token everywhere. The log message reaches it
// over streamable HTTP, which answers the call with a stream of its own.
// Where the wire cannot say which call a log message belongs to, it goes
// to the logger only, even when the server names the call's progress
// token.
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

// burstNotices is how many progress notices, and log messages, the test
// server's tool "burst" sends before its result, which it returns at once.
const burstNotices = 20

// TestMCPNoticesComeBeforeTheirResult streams calls of a tool that sends
// its progress notices and log messages just before its result. It does
// so over each kind of transport, again and again. Every notice the wire
// ties to the call is an event of the call, in the order sent, before its
// result. Progress is tied by its token; over streamable HTTP, logs are
// tied by the call's stream.
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
