package robby

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// selfServer is this test binary run as an MCP server over stdio.
func selfServer(name string) MCPServer {
	// Under -race, GORACE keeps the race runtime from sleeping 1 s at exit,
	// which would outlast the grace period of every Close.
	return MCPCommand(name, os.Args[0]).WithEnv("ROBBY_TEST_MCP_SERVER=1", "GORACE=atexit_sleep_ms=0")
}

func selfCommand() *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "ROBBY_TEST_MCP_SERVER=1", "GORACE=atexit_sleep_ms=0")
	return cmd
}

// BenchmarkMCPCall pairs one MCP tool call through robby with a raw
// ClientSession.CallTool of the same tool, over the same kind of
// transport, in one run. Robby's path is Agent.ExecuteToolCalls: lookup,
// argument validation, the call, the result rendered for the model.
func BenchmarkMCPCall(b *testing.B) {
	args := `{"a":20,"b":22}`
	transports := []struct {
		name  string
		robby func(b *testing.B) MCPServer
		raw   func(b *testing.B) mcp.Transport
	}{
		{"inmemory",
			func(b *testing.B) MCPServer { return inMemory(b, "bench", newMCPTestServer()) },
			func(b *testing.B) mcp.Transport { return memoryTransport(b, newMCPTestServer()) }},
		{"stdio",
			func(*testing.B) MCPServer { return selfServer("bench") },
			func(*testing.B) mcp.Transport { return &mcp.CommandTransport{Command: selfCommand()} }},
		{"streamable-http",
			func(b *testing.B) MCPServer { return MCPStreamableHTTP("bench", streamableURL(b, newMCPTestServer)) },
			func(b *testing.B) mcp.Transport {
				return &mcp.StreamableClientTransport{Endpoint: streamableURL(b, newMCPTestServer)}
			}},
	}
	for _, tr := range transports {
		b.Run(tr.name+"/robby", func(b *testing.B) {
			a, err := New(WithModel("m"), WithMCP(tr.robby(b)))
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			calls := []ToolCall{{ID: "1", Name: "add", Arguments: args}}
			start := time.Now()
			for b.Loop() {
				res, err := a.ExecuteToolCalls(b.Context(), calls)
				if err != nil || res[0].Output != `{"sum":42}` {
					b.Fatalf("%v %+v", err, res)
				}
				a.Reset()
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
		})
		b.Run(tr.name+"/go-sdk", func(b *testing.B) {
			client := mcp.NewClient(&mcp.Implementation{Name: "raw", Version: "v0"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
			cs, err := client.Connect(b.Context(), tr.raw(b), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			start := time.Now()
			for b.Loop() {
				res, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "add", Arguments: json.RawMessage(args)})
				if err != nil || res.IsError {
					b.Fatalf("%v %+v", err, res)
				}
				if b, _ := json.Marshal(res.StructuredContent); string(b) != `{"sum":42}` {
					panic(string(b))
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
		})
	}
}

// TestMCPCommandServer checks a command server end to end without node:
// the test binary serves, robby calls, Close ends the process.
func TestMCPCommandServer(t *testing.T) {
	a, err := New(WithModel("m"), WithMCP(selfServer("self")))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.ExecuteToolCalls(t.Context(), []ToolCall{{ID: "1", Name: "add", Arguments: `{"a":1,"b":2}`}})
	if err != nil || res[0].Output != `{"sum":3}` {
		t.Fatalf("%v %+v", err, res)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}
