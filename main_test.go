package robby

import (
	"context"
	"log"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them. Run
// with ROBBY_TEST_MCP_SERVER=1, the test binary is instead an MCP server
// over stdio, for tests and benchmarks of command servers that need no
// other program.
func TestMain(m *testing.M) {
	if os.Getenv("ROBBY_TEST_MCP_SERVER") == "1" {
		if err := newMCPTestServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
