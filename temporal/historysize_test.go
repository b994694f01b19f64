package temporal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/temporal"
	"github.com/robby-go/robby/temporal/temporaltest"
)

// chainSizes returns the history sizes of the runs of workflow id, from
// the last back to the first.
func chainSizes(t *testing.T, c client.Client, id string) []int64 {
	t.Helper()
	var sizes []int64
	runID := ""
	for {
		desc, err := c.DescribeWorkflow(t.Context(), id, runID)
		if err != nil {
			t.Fatal(err)
		}
		info := desc.RawResponse.GetWorkflowExecutionInfo()
		sizes = append(sizes, info.GetHistorySizeBytes())
		it := c.GetWorkflowHistory(t.Context(), id, info.GetExecution().GetRunId(), false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		first, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if runID = first.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId(); runID == "" {
			return sizes
		}
	}
}

// firstRunID returns the ID of the first run of workflow id.
func firstRunID(t *testing.T, c client.Client, id string) string {
	t.Helper()
	desc, err := c.DescribeWorkflow(t.Context(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	return desc.RawResponse.GetWorkflowExecutionInfo().GetFirstRunId()
}

// A run whose history passes Request.HistoryBytes continues as new. Each
// run's history then stays under the bound plus what a run starts with
// and one turn adds (a few times the conversation), where one run's grows
// with the square of its turns. The answer and the conversation are the
// same.
func TestContinueAsNewByHistorySize(t *testing.T) {
	c := dial(t, temporaltest.StartServer(t))
	const turns, page, limit = 24, 4 << 10, 256 << 10
	read := robby.NewTool("read", "Read the next page", func(context.Context, struct{}) (string, error) {
		return strings.Repeat("x", page), nil
	})
	model := robbytest.NewServer()
	defer model.Close()
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"), robby.WithTools(read), robby.WithMaxTurns(turns+1))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	w := worker.New(c, "size", worker.Options{})
	temporal.Register(w, temporal.Agents{"reader": agent}, temporal.Options{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	if *record { // a short run that continues as new by size, with the change's marker
		model.Reply(robbytest.ToolCalls(robbytest.Call("read", `{}`)), robbytest.Text("Read it."))
		run, err := temporal.Start(t.Context(), c, client.StartWorkflowOptions{ID: "record-size", TaskQueue: "size"},
			temporal.Request{Agent: "reader", Prompt: "Read a page", HistoryBytes: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.Result(t.Context()); err != nil {
			t.Fatal(err)
		}
		sizes := chainSizes(t, c, "record-size")
		if len(sizes) != 2 {
			t.Fatalf("%d runs; want 2", len(sizes))
		}
		first := firstRunID(t, c, "record-size")
		history := runHistory(t, c, "record-size", first)
		if err := os.WriteFile(filepath.Join("testdata", "continued-by-size.json"), []byte(history), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runs := map[string][]int64{}
	for _, bound := range []int{0, limit} {
		for range turns {
			model.Reply(robbytest.ToolCalls(robbytest.Call("read", `{}`)))
		}
		model.Reply(robbytest.Text("Read them all."))
		req := temporal.Request{Agent: "reader", Prompt: "Read every page", HistoryBytes: bound}
		if bound == 0 {
			req.HistoryBytes, req.TurnsPerRun = 1<<30, 1000 // one run
		}
		id := fmt.Sprintf("size-%d", bound)
		run, err := temporal.Start(t.Context(), c, client.StartWorkflowOptions{ID: id, TaskQueue: "size"}, req)
		if err != nil {
			t.Fatal(err)
		}
		res, err := run.Result(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if res.Text != "Read them all." || res.Turns != turns+1 || len(res.Messages) != 1+2*turns+1 {
			t.Errorf("bound %d: %q after %d turns, %d messages; want the answer after %d, %d", limit, res.Text,
				res.Turns, len(res.Messages), turns+1, 1+2*turns+1)
		}
		runs[id] = chainSizes(t, c, id)
	}
	one, chain := runs["size-0"], runs[fmt.Sprintf("size-%d", limit)]
	t.Logf("%d turns of %d B tool results: one run's history %d B; bounded by %d B, %d runs of %v B", turns+1, page,
		one[0], limit, len(chain), chain)
	if len(one) != 1 || len(chain) < 2 {
		t.Fatalf("runs: %d unbounded, %d bounded; want 1 and several", len(one), len(chain))
	}
	for _, size := range chain {
		if size > limit+5*turns*page {
			t.Errorf("a run's history is %d B; want at most %d B", size, limit+5*turns*page)
		}
	}
}
