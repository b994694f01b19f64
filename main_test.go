package robby

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them. Run
// with ROBBY_TEST_MCP_SERVER=1, the test binary is instead an MCP server
// over stdio, for tests and benchmarks of command servers that need no
// other program; with ROBBY_TEST_MCP_SERVER=stubborn, one that does not
// exit when its input ends, nor on SIGTERM. With ROBBY_TEST_CHAT_SERVER
// set, it is the chat server of BenchmarkTypedRunClient.
func TestMain(m *testing.M) {
	if os.Getenv("ROBBY_TEST_CHAT_SERVER") != "" {
		serveTypedBench()
		os.Exit(0)
	}
	switch os.Getenv("ROBBY_TEST_MCP_SERVER") {
	case "1":
		if err := newMCPTestServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		os.Exit(0)
	case "stubborn":
		// A server that outlives its input and ignores SIGTERM: only
		// SIGKILL ends it.
		signal.Ignore(syscall.SIGTERM)
		newMCPTestServer().Run(context.Background(), &mcp.StdioTransport{})
		time.Sleep(time.Hour)
	}
	goleak.VerifyTestMain(m)
}
