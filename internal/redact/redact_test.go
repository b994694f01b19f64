package redact

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFormsAndText(t *testing.T) {
	assert.Nil(t, Forms("short"))
	forms := Forms("Bearer rt+/secret=1 x")
	assert.Equal(t, []string{"rt+/secret=1 x", "rt%2B%2Fsecret%3D1+x", "rt+%2Fsecret=1%20x"}, forms)
	assert.Equal(t, "token [redacted] and [redacted] and [redacted]",
		Text("token rt+/secret=1 x and rt%2B%2Fsecret%3D1+x and rt+%2Fsecret=1%20x", forms))
}

func TestErrorKeepsWhatItWraps(t *testing.T) {
	secrets := Forms("s3cret-token")
	err := Error(fmt.Errorf("refresh: %w: token s3cret-token refused", fs.ErrPermission), secrets)
	assert.Equal(t, "refresh: permission denied: token [redacted] refused", err.Error())
	assert.ErrorIs(t, err, fs.ErrPermission)
	plain := errors.New("nothing secret")
	assert.Same(t, plain, Error(plain, secrets))
}

// The logger redacts the secrets of the moment each record is written.
func TestLoggerReadsTheSecretsOfNow(t *testing.T) {
	var buf bytes.Buffer
	current := "first-token-1"
	l := Logger(slog.New(slog.NewTextHandler(&buf, nil)), func() []string { return Forms(current) })
	l = l.With(slog.String("with", "first-token-1"))
	l.Info("saw first-token-1", slog.Any("error", errors.New("echo first-token-1")),
		slog.Group("g", slog.String("k", "first-token-1")))
	current = "second-token-2"
	l.Info("saw second-token-2")
	assert.NotContains(t, buf.String(), "first-token-1")
	assert.NotContains(t, buf.String(), "second-token-2")
	assert.Equal(t, 6, bytes.Count(buf.Bytes(), []byte(Mark)), buf.String())
}
