package mcpconfig

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
)

// secretConfig is an mcpServers file whose servers fail to start and
// quote a ${VAR} value in their errors: in a URL query (a dial error
// quotes the URL), and in the arguments of a command that repeats them on
// its stderr.
func secretConfig(t *testing.T, secret string, optional bool) []byte {
	t.Helper()
	t.Setenv("MCPCONFIG_SECRET_KEY", secret)
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"remote": map[string]any{"url": "http://127.0.0.1:1/mcp?key=${MCPCONFIG_SECRET_KEY}", "optional": optional},
		"local": map[string]any{"command": "sh", "args": []string{"-c", `echo "starting with token $1" >&2; exit 3`,
			"sh", "${MCPCONFIG_SECRET_KEY}"}, "optional": optional},
	}})
	require.NoError(t, err)
	return b
}

// TestExpandedValuesAreSecrets: a value a ${VAR} put in an mcpServers file
// appears in no error and no log record of the agent, in any form a URL
// gives it. New printed it in its error, the optional-server warning too.
func TestExpandedValuesAreSecrets(t *testing.T) {
	const secret = "sk-live 0123/456789+abcdef"
	forms := []string{secret, url.QueryEscape(secret), url.PathEscape(secret)}

	servers, err := Parse(secretConfig(t, secret, false))
	require.NoError(t, err)
	_, err = robby.New(robby.WithModel("m"), robby.WithMCP(servers...))
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, "[redacted]")
	assert.Contains(t, msg, "starting with token", "the stderr tail is kept, the secret cut out")
	for _, f := range forms {
		assert.NotContains(t, msg, f)
	}

	servers, err = Parse(secretConfig(t, secret, true))
	require.NoError(t, err)
	var logs bytes.Buffer
	a, err := robby.New(robby.WithModel("m"), robby.WithMCP(servers...),
		robby.WithLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	require.NoError(t, err)
	defer a.Close()
	status := a.MCPStatus()
	require.Len(t, status, 2)
	for _, st := range status {
		require.Error(t, st.Err, st.Name)
		assert.False(t, st.Connected)
		for _, f := range forms {
			assert.NotContains(t, st.Err.Error(), f)
		}
	}
	require.Contains(t, logs.String(), "optional MCP server left out")
	for _, f := range forms {
		assert.NotContains(t, logs.String(), f)
		assert.NotContains(t, logs.String(), strings.ReplaceAll(f, "/", `\/`))
	}
}
