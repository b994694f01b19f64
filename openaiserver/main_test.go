package openaiserver_test

import (
	"context"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest/agenttest"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var (
	newServer    = agenttest.NewServer
	newTestAgent = agenttest.New
)

// newStore opens a SQLite store, closed with the test, as a robby.Store.
func newStore(t *testing.T) robby.Store { return agenttest.NewStore(t) }

type addArgs struct {
	A int `json:"a" jsonschema:"the first number"`
	B int `json:"b" jsonschema:"the second number"`
}

var addTool = robby.NewTool("add", "Adds two numbers", func(_ context.Context, in addArgs) (int, error) {
	return in.A + in.B, nil
})

// waitingTool returns a tool that waits for its context to end, a channel
// closed when it starts, and whether it saw its context cancelled.
func waitingTool(name string) (tool robby.Tool, started <-chan struct{}, cancelled *atomic.Bool) {
	start := make(chan struct{})
	cancelled = new(atomic.Bool)
	tool = robby.FuncTool(name, "Waits", nil, func(ctx context.Context, _ map[string]any) (any, error) {
		close(start)
		<-ctx.Done()
		cancelled.Store(true)
		return nil, ctx.Err()
	})
	return tool, start, cancelled
}
