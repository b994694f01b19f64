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
	workerSecret  = "sk-test-secret-never-in-history"
	workerTimeout = 2 * time.Minute
)

// startWorker starts this test binary as a worker process serving the
// agent "calc" over the model at modelURL.
func startWorker(t *testing.T, addr, modelURL, queue, marker string, hang, idempotent bool) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"="+addr, workerModel+"="+modelURL, workerKey+"="+workerSecret,
		workerQueue+"="+queue, workerMarker+"="+marker, workerHang+"="+fmt.Sprint(b2i(hang)),
		workerIdem+"="+fmt.Sprint(b2i(idempotent)))
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
	slow := robby.NewTool("slow_step", "A step that takes time", func(ctx context.Context, _ struct{}) (string, error) {
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
	})
	if os.Getenv(workerIdem) == "1" {
		slow = slow.Idempotent()
	}
	lookup := robby.NewTool("lookup", "Look a city up", func(_ context.Context, in struct {
		City string `json:"city"`
	}) (string, error) {
		return in.City + ": 21°C", nil
	})
	agent, err := robby.New(robby.WithBaseURL(os.Getenv(workerModel)), robby.WithAPIKey(os.Getenv(workerKey)),
		robby.WithModel("m"), robby.WithTools(slow, lookup), robby.WithToolTimeout(workerTimeout))
	if err != nil {
		return err
	}
	defer agent.Close()
	c, err := client.Dial(client.Options{HostPort: os.Getenv(workerEnv), Logger: quietLogger()})
	if err != nil {
		return err
	}
	defer c.Close()
	w := worker.New(c, os.Getenv(workerQueue), worker.Options{})
	temporal.Register(w, temporal.Agents{"calc": agent}, temporal.Options{})
	return w.Run(worker.InterruptCh())
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
