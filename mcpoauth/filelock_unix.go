//go:build unix

package mcpoauth

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes the exclusive lock of f, waiting for another holder.
func lockFile(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}
