package temporal_test

import (
	"fmt"
	"os"
	"testing"

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
	goleak.VerifyTestMain(m)
}
