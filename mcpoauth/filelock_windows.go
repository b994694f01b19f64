//go:build windows

package mcpoauth

import (
	"os"

	"golang.org/x/sys/windows"
)

// lockFile takes the exclusive lock of f, waiting for another holder.
func lockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, &ol)
}
