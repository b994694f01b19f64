package robby

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// TestSecretsStayOutOfErrorsAndLogs gives the agent a key, an MCP header
// and an MCP environment variable. The provider and the server echo them,
// and the test looks for them in every error and log line.
func TestSecretsStayOutOfErrorsAndLogs(t *testing.T) {
	const key, token, envSecret = "sk-live-0123456789abcdef", "mcp-token-abcdef012345", "ghp_envsecret0123456789"
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	srv := newServer(t)
	srv.Reply(robbytest.Error(401, `{"error":{"message":"Incorrect API key provided: `+key+`","type":"invalid_request_error"}}`))
	a := newTestAgent(t, srv, WithAPIKey(key), WithLogger(logger))
	_, err := a.Run(t.Context(), "hi")
	require.Error(t, err)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	var oe *openai.Error
	require.ErrorAs(t, err, &oe, "redaction keeps the chain")
	assert.NotContains(t, err.Error(), key)
	assert.NotContains(t, apiErr.Message, key)
	assert.Contains(t, err.Error(), "Incorrect API key provided: [redacted]")
	assert.Equal(t, "Bearer "+key, srv.Requests()[0].Header.Get("Authorization"), "the key itself is sent")

	// A command server that prints its environment and fails to start.
	_, err = New(WithModel("m"), WithLogger(logger), WithMCP(
		MCPCommand("leaky", "sh", "-c", "echo token is $GITHUB_TOKEN >&2; exit 3").WithEnv("GITHUB_TOKEN="+envSecret),
		MCPStreamableHTTP("remote", "http://127.0.0.1:1/mcp").WithHeader("Authorization", "Bearer "+token).WithOptional(),
	))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "token is [redacted]", "the stderr tail is kept, the secret is not")
	for _, secret := range []string{key, token, envSecret} {
		assert.NotContains(t, err.Error(), secret)
		assert.NotContains(t, logs.String(), secret)
	}
}

func TestMCPCommandsDoNotInheritSecrets(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-parent-secret-value")
	t.Setenv("ROBBY_VISIBLE", "shown")
	env := MCPCommand("x", "true").WithEnv("ROBBY_VISIBLE=given").environ()
	joined := strings.Join(env, "\n")
	assert.NotContains(t, joined, "sk-parent-secret-value")
	assert.Contains(t, joined, "ROBBY_VISIBLE=given")
	assert.Contains(t, joined, "PATH="+os.Getenv("PATH"))
	assert.Contains(t, strings.Join(MCPCommand("x", "true").WithInheritedEnv().environ(), "\n"), "sk-parent-secret-value")
}

func TestRedactedErrorsKeepTheirChain(t *testing.T) {
	base := errors.New("boom")
	s := secrets{"supersecret"}
	err := s.wrap(fmt.Errorf("with supersecret inside: %w", base))
	assert.Equal(t, "with [redacted] inside: boom", err.Error())
	assert.ErrorIs(t, err, base)
	assert.Same(t, base, s.wrap(base), "nothing to redact, nothing wrapped")
}
