package agui_test

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/robby-go/robby/internal/httpapi/httpapitest"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var (
	newAgent  = httpapitest.NewAgent
	newServer = httpapitest.NewServer
	newStore  = httpapitest.NewStore
	do        = httpapitest.Do
	addTool   = httpapitest.AddTool
)

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
