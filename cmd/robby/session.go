package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/robby-go/robby/sqlitestore"
)

// storeEnv names the variable that overrides the default store file.
const storeEnv = "ROBBY_STORE"

// defaultStorePath returns where chat keeps its sessions when neither
// -store nor ROBBY_STORE says: conversations.db in robby's data directory.
// That is $XDG_DATA_HOME/robby, ~/.local/share/robby on Linux, and the
// user's configuration directory elsewhere.
func defaultStorePath() string {
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

// openStore opens the SQLite store at path, making the file if missing.
// Its directory must exist, unless makeDir says to make it: only the
// default path's is made, not one a mistyped -store names.
func openStore(ctx context.Context, path string, makeDir bool) (*sqlitestore.Store, error) {
	dir := filepath.Dir(path)
	if makeDir {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("making the store's directory: %w: give -store FILE elsewhere", err)
		}
	} else if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("-store %s: no directory %s: make it (mkdir -p %s) or give another file", path, dir, dir)
	}
	store, err := sqlitestore.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("-store %s: %w", path, err)
	}
	return store, nil
}
