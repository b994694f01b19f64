package temporal_test

import (
	"fmt"
	"os"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them. With
// ROBBY_TEST_TEMPORAL_WORKER set, the test binary is instead a worker
// process of the real-server tests, which they kill.
func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		if err := runWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// The SDK's test environment otherwise hashes this binary, over 100 MB
	// with -race, as its build ID in the workflow task that schedules the
	// process's first activity, under its 1 s deadlock detector. On a busy
	// machine that task failed as a "potential deadlock". A worker's build
	// ID means nothing to these tests.
	worker.SetBinaryChecksum("robby-temporal-test")
	goleak.VerifyTestMain(m)
}
