package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/robby-go/robby/sqlitestore"
)

// storeEnv names the variable that overrides the default store file.
const storeEnv = "ROBBY_STORE"

// defaultStorePath returns where chat keeps its sessions: $ROBBY_STORE, else
// conversations.db in robby's data directory. That is $XDG_DATA_HOME/robby,
// ~/.local/share/robby on Linux, and the user's configuration directory
// elsewhere.
func defaultStorePath() string {
	if p := os.Getenv(storeEnv); p != "" {
		return p
	}
	dir := os.Getenv("XDG_DATA_HOME")
	if dir == "" && runtime.GOOS == "linux" {
		if home, err := os.UserHomeDir(); err == nil {
			dir = filepath.Join(home, ".local", "share")
		}
	}
	if dir == "" {
		var err error
		if dir, err = os.UserConfigDir(); err != nil {
			return "conversations.db"
		}
	}
	return filepath.Join(dir, "robby", "conversations.db")
}

// openStore opens the SQLite store at path, creating its directory.
func openStore(ctx context.Context, path string) (*sqlitestore.Store, error) {
	if path == "" {
		return nil, errors.New("no store file: give -store")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store directory: %w", err)
	}
	return sqlitestore.Open(ctx, path)
}
