package main

import (
	"crypto/sha256"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestProcCPU reads this process's CPU time from /proc as it spends some,
// and finds what getrusage says, to the clock tick.
func TestProcCPU(t *testing.T) {
	for range 3 {
		sum := sha256.Sum256(nil)
		for range 200_000 {
			sum = sha256.Sum256(sum[:])
		}
		var ru syscall.Rusage
		got, err := procCPU(os.Getpid())
		if err == nil {
			err = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		}
		if err != nil {
			t.Fatal(err)
		}
		want := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		if d := want - got; d < -20*time.Millisecond || d > 20*time.Millisecond {
			t.Errorf("/proc says %v, getrusage %v", got, want)
		}
	}
	if _, err := procCPU(-1); err == nil {
		t.Error("no error for a process that is not")
	}
}
