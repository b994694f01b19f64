package agui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/httpapi/httpapitest"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/sqlitestore"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var (
	newServer = httpapitest.NewServer
	do        = httpapitest.Do
)

// newAgent builds an agent on srv with retries off, closed with the test.
func newAgent(t *testing.T, srv *robbytest.Server, opts ...robby.Option) *robby.Agent {
	t.Helper()
	base := []robby.Option{robby.WithBaseURL(srv.URL), robby.WithAPIKey(""), robby.WithModel("test-model"),
		robby.WithRequestOptions(option.WithMaxRetries(0))}
	a, err := robby.New(append(base, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	return a
}

// newStore opens a SQLite store in the test's directory.
func newStore(t *testing.T) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "chats.db"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

// addTool adds two numbers.
var addTool = robby.NewTool("add", "Adds two numbers", func(_ context.Context, in addArgs) (int, error) {
	return in.A + in.B, nil
})

// readEvents reads an AG-UI event stream to its end.
func readEvents(t *testing.T, body io.Reader) []map[string]any {
	t.Helper()
	var events []map[string]any
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if sc.Text() == "" {
			continue
		}
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		require.True(t, ok, "a line not of data: %q", sc.Text())
		var e map[string]any
		require.NoError(t, json.Unmarshal([]byte(data), &e), data)
		events = append(events, e)
	}
	return events
}

func eventTypes(events []map[string]any) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i], _ = e["type"].(string)
	}
	return out
}
