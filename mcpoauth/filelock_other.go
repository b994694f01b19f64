//go:build !unix && !windows

package mcpoauth

import (
	"errors"
	"os"
)

// lockFile reports that this system has no file locks robby knows. A save that
// could lose another process's token is refused.
func lockFile(*os.File) error {
	return errors.New("no file locking on this system")
}
