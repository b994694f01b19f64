package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/pgstore"
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

// A closingStore is a store the command opened, and closes.
type closingStore interface {
	robby.Store
	Close() error
}

// openStore opens the store at path. A postgres:// or postgresql:// URL is a
// PostgreSQL database, which replicas may share. Anything else is a SQLite
// file, made if missing. Its directory must exist, unless makeDir says to
// make it: only the default path's is made, not one a mistyped -store names.
func openStore(ctx context.Context, path string, makeDir bool) (closingStore, error) {
	if isPostgres(path) {
		store, err := pgstore.Open(ctx, path)
		if err != nil {
			return nil, fmt.Errorf("-store %s: %w", storeName(path), err)
		}
		return store, nil
	}
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

// storeName names the store at path, for the log: a database's host and
// name, never its user, password or parameters.
func storeName(path string) string {
	if !isPostgres(path) {
		return path
	}
	u, err := url.Parse(path)
	if err != nil {
		return "a PostgreSQL database"
	}
	return "PostgreSQL database " + u.Host + u.Path
}

// isPostgres reports whether path is a PostgreSQL URL.
func isPostgres(path string) bool {
	return strings.HasPrefix(path, "postgres://") || strings.HasPrefix(path, "postgresql://")
}
