package robby

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/robby-go/robby/robbytest"
)

// newFloodServer is an MCP server whose tool "flood" sends n progress
// notices for its call, as fast as it can, then returns at once. A server
// controls the count of notices. Robby must carry them in linear time and
// bounded memory.
func newFloodServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "flood", Version: "v1"}, nil)
	type in struct {
		N int `json:"n"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "flood"}, func(ctx context.Context, req *mcp.CallToolRequest, in in) (*mcp.CallToolResult, any, error) {
		token := req.Params.GetProgressToken()
		for i := 1; i <= in.N; i++ {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: float64(in.N)}); err != nil {
				return nil, nil, err
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "flooded"}}}, nil, nil
	})
	return s
}

// BenchmarkMCPNoticeFlood pairs a streamed run whose one MCP call floods it
// with n progress notices with the go-sdk alone calling the same tool.
// Each notice is an event of the stream; the go-sdk counts the same
// notices in its handler. A cost per notice flat from 1,000 to 10,000
// notices means linear time. Over streamable HTTP the notices come on the
// call's own response stream, and every one is delivered. In memory they
// share the session's wire, which robby does not hold up for one stream.
// Those that find the stream's buffer full are dropped and counted
// (delivered/op is the share that came through).
func BenchmarkMCPNoticeFlood(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, tr := range []string{"inmemory", "streamable-http"} {
			transport := func(b *testing.B) mcp.Transport {
				if tr == "inmemory" {
					return memoryTransport(b, newFloodServer())
				}
				return &mcp.StreamableClientTransport{Endpoint: streamableURL(b, newFloodServer)}
			}
			name := fmt.Sprintf("%s/%d", tr, n)
			b.Run(name+"/robby", func(b *testing.B) {
				benchFloodRobby(b, n, MCPTransport("flood", transport(b)), tr == "streamable-http")
			})
			b.Run(name+"/go-sdk", func(b *testing.B) { benchFloodSDK(b, n, transport(b)) })
		}
	}
}

// benchFloodRobby runs the flood through robby; every notice must come
// through if all is set.
func benchFloodRobby(b *testing.B, n int, server MCPServer, all bool) {
	srv := robbytest.NewServer()
	b.Cleanup(srv.Close)
	srv.Fallback(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		if req.Messages[len(req.Messages)-1].Role == "tool" {
			return robbytest.Text("done")
		}
		return robbytest.ToolCalls(robbytest.Call("flood", fmt.Sprintf(`{"n":%d}`, n)))
	}))
	a, err := New(WithBaseURL(srv.URL), WithModel("m"), WithMCP(server), WithToolTimeout(time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	b.ReportAllocs()
	delivered := 0
	for b.Loop() {
		a.Reset()
		got := 0
		for ev, err := range a.Stream(b.Context(), "go") {
			if err != nil {
				b.Fatal(err)
			}
			if ev.Kind == EventProgress {
				got++
			}
		}
		if got > n || all && got < n {
			b.Fatalf("%d of %d notices", got, n)
		}
		delivered += got
	}
	reportPerNotice(b, n)
	b.ReportMetric(float64(delivered)/float64(b.N*n), "delivered/op")
}

func benchFloodSDK(b *testing.B, n int, transport mcp.Transport) {
	var got atomic.Int64
	handled := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "raw", Version: "v0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			if got.Add(1) == int64(n) {
				handled <- struct{}{}
			}
		},
	})
	cs, err := client.Connect(b.Context(), transport, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	args := json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))
	b.ReportAllocs()
	for b.Loop() {
		got.Store(0)
		params := &mcp.CallToolParams{Name: "flood", Arguments: args}
		params.SetProgressToken("flood")
		res, err := cs.CallTool(b.Context(), params)
		if err != nil || res.IsError {
			b.Fatalf("%v %+v", err, res)
		}
		select { // the go-sdk handles notices on a goroutine of its own: wait for the last
		case <-handled:
		case <-time.After(time.Minute):
			b.Fatalf("%d of %d notices", got.Load(), n)
		}
	}
	reportPerNotice(b, n)
}

// reportPerNotice reports the time per notice.
func reportPerNotice(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/notice")
}
