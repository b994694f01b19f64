package openaiserver_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newTestAgent builds an agent on srv with retries off, so that error tests
// see the first answer.
func newTestAgent(t *testing.T, srv *robbytest.Server, opts ...robby.Option) *robby.Agent {
	t.Helper()
	base := []robby.Option{robby.WithBaseURL(srv.URL), robby.WithAPIKey(""), robby.WithModel("test-model"),
		robby.WithRequestOptions(option.WithMaxRetries(0))}
	a, err := robby.New(append(base, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	return a
}

// newServer starts a scripted model endpoint, closed with the test.
func newServer(t *testing.T) *robbytest.Server {
	srv := robbytest.NewServer()
	t.Cleanup(srv.Close)
	return srv
}

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
