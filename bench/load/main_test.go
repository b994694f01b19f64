package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine of its own
// behind: the load's users, servers and clients end with each run.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
