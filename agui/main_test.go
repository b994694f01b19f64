package agui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/httpapi/httpapitest"
	"github.com/robby-go/robby/robbytest/agenttest"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var (
	newServer = agenttest.NewServer
	newAgent  = agenttest.New
	newStore  = agenttest.NewStore
	do        = httpapitest.Do
)

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
