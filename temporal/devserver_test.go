package temporal_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/temporal"
)

// dial connects a client to the server at addr, closed with the test.
func dial(t testing.TB, addr string) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func quietLogger() log.Logger {
	return log.NewStructuredLogger(slog.New(slog.DiscardHandler))
}

// Environment of a worker process started by startWorker.
const (
	workerEnv     = "ROBBY_TEST_TEMPORAL_WORKER" // the server's address
	workerModel   = "ROBBY_TEST_MODEL_URL"
	workerKey     = "ROBBY_TEST_API_KEY"
	workerQueue   = "ROBBY_TEST_TASK_QUEUE"
	workerMarker  = "ROBBY_TEST_MARKER" // a file the slow tool appends to as it starts
	workerHang    = "ROBBY_TEST_HANG"   // "1": the slow tool hangs
	workerIdem    = "ROBBY_TEST_IDEMPOTENT"
	workerMCP     = "ROBBY_TEST_MCP"  // "1": slow_step is an MCP server's tool, idempotent by its annotations
	workerTeam    = "ROBBY_TEST_TEAM" // "1": "calc" is a team: triage hands over to billing, which has the tools
	workerSecret  = "sk-test-secret-never-in-history"
	workerTimeout = 2 * time.Minute
)

// startWorker starts this test binary as a worker process serving the
// agent "calc" over the model at modelURL.
// Its slow_step is a local tool, or with viaMCP an MCP server's.
func startWorker(t *testing.T, addr, modelURL, queue, marker string, hang, idempotent, viaMCP bool, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), env...), workerEnv+"="+addr, workerModel+"="+modelURL, workerKey+"="+workerSecret,
		workerQueue+"="+queue, workerMarker+"="+marker, workerHang+"="+fmt.Sprint(b2i(hang)),
		workerIdem+"="+fmt.Sprint(b2i(idempotent)), workerMCP+"="+fmt.Sprint(b2i(viaMCP)))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// runWorker is the worker process: it serves until killed or interrupted.
func runWorker() error {
	step := func(ctx context.Context) (string, error) {
		f, err := os.OpenFile(os.Getenv(workerMarker), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return "", err
		}
		fmt.Fprintln(f, os.Getpid())
		f.Close()
		if os.Getenv(workerHang) == "1" {
			<-ctx.Done() // until the process is killed
			return "", ctx.Err()
		}
		return "step done", nil
	}
	var tools []robby.Tool
	var servers []robby.MCPServer
	if os.Getenv(workerMCP) == "1" {
		servers = append(servers, stepServer(step, os.Getenv(workerIdem) == "1"))
	} else {
		slow := robby.NewTool("slow_step", "A step that takes time", func(ctx context.Context, _ struct{}) (string, error) {
			return step(ctx)
		})
		if os.Getenv(workerIdem) == "1" {
			slow = slow.Idempotent()
		}
		tools = append(tools, slow)
	}
	lookup := robby.NewTool("lookup", "Look a city up", func(_ context.Context, in struct {
		City string `json:"city"`
	}) (string, error) {
		return in.City + ": 21°C", nil
	})
	base := []robby.Option{robby.WithBaseURL(os.Getenv(workerModel)), robby.WithAPIKey(os.Getenv(workerKey)), robby.WithModel("m")}
	opts := append(base, robby.WithTools(append(tools, lookup)...), robby.WithMCP(servers...), robby.WithToolTimeout(workerTimeout))
	if os.Getenv(workerTeam) == "1" {
		opts = append(opts, robby.WithName("billing"), robby.WithSystem(billingSystem))
	}
	agent, err := robby.New(opts...)
	if err != nil {
		return err
	}
	defer agent.Close()
	if os.Getenv(workerTeam) == "1" {
		root, err := robby.New(append(base, robby.WithName("triage"), robby.WithSystem(triageSystem),
			robby.WithHandoffs(robby.Handoff{To: "billing", History: robby.HistoryNone}), robby.WithTeam(agent))...)
		if err != nil {
			return err
		}
		defer root.Close()
		agent = root
	}
	c, err := client.Dial(client.Options{HostPort: os.Getenv(workerEnv), Logger: quietLogger()})
	if err != nil {
		return err
	}
	defer c.Close()
	w := worker.New(c, os.Getenv(workerQueue), worker.Options{})
	temporal.Register(w, temporal.Agents{"calc": agent}, temporal.Options{})
	return w.Run(worker.InterruptCh())
}

// stepServer is an MCP server, in the worker's process, whose one tool
// slow_step runs step. With idempotent its annotations say
// idempotentHint: true; without, they say nothing of it.
func stepServer(step func(context.Context) (string, error), idempotent bool) robby.MCPServer {
	s := mcp.NewServer(&mcp.Implementation{Name: "steps", Version: "1"}, nil)
	tool := &mcp.Tool{Name: "slow_step", Description: "A step that takes time",
		InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{IdempotentHint: idempotent}}
	s.AddTool(tool, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		out, err := step(ctx)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out}}}, nil
	})
	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	go s.Run(context.Background(), serverEnd) // ends with the process, which the test kills
	return robby.MCPTransport("steps", clientEnd)
}

// waitForLines waits until the file at path has n lines.
func waitForLines(t *testing.T, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(path)
		if strings.Count(string(b), "\n") >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s did not get %d lines within a minute", filepath.Base(path), n)
}
