package main

import (
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/robby-go/robby/mcpoauth"
)

// oauthEnv are the variables of the OAuth of the -mcp file's servers.
var oauthEnv = []string{
	"ROBBY_OAUTH_KEY\tkeeps MCP servers' OAuth tokens between runs, encrypted with this key (32 bytes in base64: openssl rand -base64 32); without it they are kept in memory",
	"ROBBY_OAUTH_FILE\twhere those tokens are kept (default " + filepath.Join("$XDG_CONFIG_HOME", "robby", "mcp-tokens") + " or the system's equivalent)",
}

// oauthOptions returns how the commands authorize with the -mcp file's
// streamable HTTP servers. They use mcpoauth's browser and loopback redirect,
// and write the URL to stderr. Tokens are kept in memory or, with
// ROBBY_OAUTH_KEY, in an encrypted file.
func oauthOptions(stderr io.Writer, logger *slog.Logger) ([]mcpoauth.Option, error) {
	opts := []mcpoauth.Option{mcpoauth.WithPrompt(stderr), mcpoauth.WithLogger(logger)}
	k := os.Getenv("ROBBY_OAUTH_KEY")
	if k == "" {
		return opts, nil
	}
	key, err := base64.StdEncoding.DecodeString(k)
	if err != nil || len(key) != 32 {
		// The key itself is never shown.
		return nil, errors.New("ROBBY_OAUTH_KEY must be 32 bytes in base64 (openssl rand -base64 32)")
	}
	path := os.Getenv("ROBBY_OAUTH_FILE")
	if path == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return nil, errors.New("ROBBY_OAUTH_KEY is set, but there is no user configuration directory: set ROBBY_OAUTH_FILE")
		}
		path = filepath.Join(dir, "robby", "mcp-tokens")
	}
	store, err := mcpoauth.NewFileStore(path, key)
	if err != nil {
		return nil, err
	}
	return append(opts, mcpoauth.WithTokenStore(store)), nil
}
