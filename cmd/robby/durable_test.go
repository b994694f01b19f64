package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/temporal/temporaltest"
)

// TestRunTemporalSurvivesWorkerKill runs robby run -temporal against a
// real Temporal dev server, served by a robby worker process that is
// SIGKILLed in the middle of an MCP tool call; a second worker finishes
// the run. The model request that completed is not sent again, the tool
// (not idempotent) is not run again, the model reads that its call was
// interrupted, and run prints the answer.
func TestRunTemporalSurvivesWorkerKill(t *testing.T) {
	addr := temporaltest.StartServer(t)
	started := make(chan struct{}, 1)
	release := make(chan struct{}) // the hung call's session outlives its worker
	var calls atomic.Int32
	s := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "deploy", Description: "Deploy the service"},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if calls.Add(1) == 1 {
				started <- struct{}{}
				select { // the worker dies meanwhile
				case <-ctx.Done():
				case <-release:
				}
				return nil, nil, errors.New("gone")
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deployed"}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() { // a killed worker never ends its session
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	t.Cleanup(hs.Close) // after the workers' cleanups: they hold sessions open
	defer close(release)
	config := filepath.Join(t.TempDir(), "mcp.json")
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"ops": map[string]any{"url": hs.URL}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(config, b, 0o600))
	model := upstream(t, robbytest.ToolCalls(robbytest.Call("deploy", `{}`)),
		robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			return robbytest.Text("Deploy result: " + req.Messages[len(req.Messages)-1].Content)
		}))

	worker := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "worker", "-temporal", addr, "-task-queue", "e2e",
			"-base-url", model.URL, "-model", "m", "-mcp", config)
		cmd.Env = append(os.Environ(), "ROBBY_TEST_MAIN=1", "OPENAI_API_KEY=sk-worker-only")
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	first := worker()
	runner := exec.Command(os.Args[0], "run", "-temporal", addr, "-task-queue", "e2e", "-workflow-id", "e2e-kill",
		"Deploy the service")
	runner.Env = append(os.Environ(), "ROBBY_TEST_MAIN=1", "OPENAI_API_KEY=")
	var stdout, stderr bytes.Buffer
	runner.Stdout, runner.Stderr = &stdout, &stderr
	require.NoError(t, runner.Start())
	t.Cleanup(func() { runner.Process.Kill(); runner.Wait() })

	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the tool was not called within a minute")
	}
	require.NoError(t, first.Process.Kill()) // SIGKILL, mid-call
	first.Wait()
	worker()
	done := make(chan error, 1)
	go func() { done <- runner.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, stderr.String())
	case <-time.After(2 * time.Minute):
		t.Fatal("robby run -temporal did not end within 2 minutes")
	}
	out := stdout.String()
	assert.True(t, strings.HasPrefix(out, "Deploy result: Error: robby: interrupted"), "answer %q", out)
	reqs := model.Requests()
	assert.Len(t, reqs, 2, "the first model request, which completed, was not sent again")
	assert.Equal(t, int32(1), calls.Load(), "the tool, not idempotent, ran once")
	assert.Equal(t, "Bearer sk-worker-only", reqs[0].Header.Get("Authorization"), "the worker's key")
}

// TestRunTemporalSchema: robby run -temporal -schema FILE asks the
// worker's model for JSON of the schema (response_format json_schema),
// and prints the answer as one line of JSON; an answer that does not fit
// is an error showing it.
func TestRunTemporalSchema(t *testing.T) {
	addr := temporaltest.StartServer(t)
	model := upstream(t, robbytest.Text(`{"city": "Lyon", "days": 3}`), robbytest.Text(`{"city": 7}`))
	worker := exec.Command(os.Args[0], "worker", "-temporal", addr, "-task-queue", "typed", "-base-url", model.URL, "-model", "m")
	worker.Env = append(os.Environ(), "ROBBY_TEST_MAIN=1", "OPENAI_API_KEY=sk-worker-only")
	worker.Stderr = os.Stderr
	require.NoError(t, worker.Start())
	t.Cleanup(func() { worker.Process.Kill(); worker.Wait() })
	schema := filepath.Join(t.TempDir(), "trip.json")
	require.NoError(t, os.WriteFile(schema, []byte(`{"type": "object", "properties": {"city": {"type": "string"},
		"days": {"type": "integer"}}, "required": ["city", "days"], "additionalProperties": false}`), 0o600))
	args := []string{"run", "-temporal", addr, "-task-queue", "typed", "-schema", schema, "Plan a trip"}

	var stdout, stderr bytes.Buffer
	require.NoError(t, run(t.Context(), args, nil, &stdout, &stderr), stderr.String())
	assert.Equal(t, `{"city":"Lyon","days":3}`+"\n", stdout.String())
	assert.Contains(t, stderr.String(), "durable run robby-")
	var format struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Schema map[string]any `json:"schema"`
		} `json:"json_schema"`
	}
	require.NoError(t, json.Unmarshal(model.Requests()[0].ResponseFormat, &format))
	assert.Equal(t, "json_schema", format.Type)
	assert.Equal(t, []any{"city", "days"}, format.JSONSchema.Schema["required"])

	stdout.Reset()
	err := run(t.Context(), args, nil, &stdout, &stderr)
	require.ErrorContains(t, err, `the last answer: {"city": 7}`)
	assert.Empty(t, stdout.String())

	err = run(t.Context(), append([]string{"run", "-answer-mode", "tool"}, args[1:]...), nil, &stdout, &stderr)
	assert.ErrorContains(t, err, "-answer-mode tool does not work with -temporal")
}
