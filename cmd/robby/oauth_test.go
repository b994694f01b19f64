package main

import (
	"bytes"
	"encoding/base64"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOAuthOptions(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	t.Setenv("ROBBY_OAUTH_KEY", "")
	opts, err := oauthOptions(&bytes.Buffer{}, logger)
	require.NoError(t, err)
	assert.Len(t, opts, 2, "memory only: the prompt and the logger")

	t.Setenv("ROBBY_OAUTH_KEY", "not-base64-and-secret")
	_, err = oauthOptions(&bytes.Buffer{}, logger)
	assert.EqualError(t, err, "ROBBY_OAUTH_KEY must be 32 bytes in base64 (openssl rand -base64 32)")
	assert.NotContains(t, err.Error(), "not-base64-and-secret")

	t.Setenv("ROBBY_OAUTH_KEY", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32)))
	t.Setenv("ROBBY_OAUTH_FILE", filepath.Join(t.TempDir(), "tokens"))
	opts, err = oauthOptions(&bytes.Buffer{}, logger)
	require.NoError(t, err)
	assert.Len(t, opts, 3, "and the encrypted file")
}
