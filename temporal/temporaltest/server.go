// Package temporaltest starts a Temporal development server for tests of
// durable runs. It runs the binary that temporal/internal/devserver builds,
// named by the environment variable ROBBY_TEMPORAL_SERVER. The server keeps
// SQLite in memory, has the "default" namespace, and no UI. Nothing is
// downloaded at test time.
package temporaltest

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ServerEnv names the variable that gives the dev server's path.
const ServerEnv = "ROBBY_TEMPORAL_SERVER"

// StartServer starts a dev server on a free port of 127.0.0.1 and returns its
// frontend's address. The server stops with the test. Without a server binary
// the test is skipped, except under CI=true, where it fails.
func StartServer(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(ServerEnv)
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no Temporal dev server: set %s (.ci/run builds it)", ServerEnv)
		}
		t.Skipf("no Temporal dev server: set %s to one built from temporal/internal/devserver", ServerEnv)
	}
	cmd := exec.Command(bin, "-port", "0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		r := bufio.NewReader(out)
		line, _ := r.ReadString('\n')
		ready <- strings.TrimSpace(line)
		io.Copy(io.Discard, r)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-copied
		cmd.Wait()
	})
	select {
	case line := <-ready:
		addr, ok := strings.CutPrefix(line, "ready ")
		if !ok {
			t.Fatalf("the dev server said %q", line)
		}
		return addr
	case <-time.After(time.Minute):
		t.Fatal("the dev server did not start within a minute")
	}
	return ""
}
