package temporal_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/temporal"
	"github.com/robby-go/robby/temporal/temporaltest"
)

var record = flag.Bool("record", false, "write the histories of the real-server tests to testdata, for the replay test")

// A worker process killed in the middle of a tool call: another finishes
// the run, no model request that completed is sent again, and the tool
// runs again only if it is idempotent. The API key the workers use is in
// no event of the history.
func TestWorkerKilledMidToolCall(t *testing.T) {
	for _, idempotent := range []bool{true, false} {
		name := map[bool]string{true: "idempotent", false: "not-idempotent"}[idempotent]
		t.Run(name, func(t *testing.T) { testWorkerKilled(t, idempotent, false) })
	}
}

// The same with an MCP server's tool: its annotation idempotentHint: true
// makes it run again on the other worker; without, the call is interrupted.
func TestWorkerKilledMidMCPToolCall(t *testing.T) {
	for _, idempotent := range []bool{true, false} {
		name := map[bool]string{true: "idempotentHint", false: "no-hint"}[idempotent]
		t.Run(name, func(t *testing.T) { testWorkerKilled(t, idempotent, true) })
	}
}

func testWorkerKilled(t *testing.T, idempotent, viaMCP bool) {
	addr := temporaltest.StartServer(t)
	model := robbytest.NewServer()
	defer model.Close()
	model.Reply(
		robbytest.ToolCalls(robbytest.Call("lookup", `{"city":"Paris"}`)),
		robbytest.ToolCalls(robbytest.Call("slow_step", `{}`)),
		robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			last := req.Messages[len(req.Messages)-1]
			return robbytest.Text("Paris is at 21°C; the step said: " + last.Content)
		}),
	)
	queue := "kill-" + t.Name()
	marker := filepath.Join(t.TempDir(), "calls")
	first := startWorker(t, addr, model.URL, queue, marker, true, idempotent, viaMCP)
	c := dial(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := temporal.Start(ctx, c, client.StartWorkflowOptions{ID: strings.ReplaceAll(queue, "/", "-"), TaskQueue: queue},
		temporal.Request{Agent: "calc", Prompt: "Weather in Paris?", HeartbeatTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	waitForLines(t, marker, 1) // the slow step runs on the first worker
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	startWorker(t, addr, model.URL, queue, marker, false, idempotent, viaMCP)
	res, err := run.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reqs := model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3: none that completed sent again", len(reqs))
	}
	runs, _ := os.ReadFile(marker)
	switch n := strings.Count(string(runs), "\n"); {
	case idempotent && (n != 2 || !strings.HasSuffix(res.Text, "step done")):
		t.Errorf("idempotent: ran %d times, answer %q; want 2 and the step's result", n, res.Text)
	case !idempotent && (n != 1 || !strings.Contains(res.Text, "interrupted")):
		t.Errorf("not idempotent: ran %d times, answer %q; want once and interrupted", n, res.Text)
	}
	if !strings.HasPrefix(res.Text, "Paris is at 21°C") || res.Turns != 3 || len(res.ToolCalls) != 2 {
		t.Errorf("result %+v", res)
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer "+workerSecret {
		t.Errorf("the workers sent Authorization %q, want their key", got)
	}
	history := historyOf(t, c, run.ID())
	if strings.Contains(history, workerSecret) {
		t.Error("the API key is in the workflow's history")
	}
	if *record && idempotent && !viaMCP {
		if err := os.WriteFile(filepath.Join("testdata", "killed-worker.json"), []byte(history), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// historyOf returns a workflow's history as the JSON the replayer reads.
func historyOf(t *testing.T, c client.Client, id string) string {
	t.Helper()
	return runHistory(t, c, id, "")
}

// runHistory returns the history of a workflow's run (its last if runID
// is empty) as the JSON the replayer reads.
func runHistory(t *testing.T, c client.Client, id, runID string) string {
	t.Helper()
	var h historypb.History
	it := c.GetWorkflowHistory(context.Background(), id, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, e)
	}
	b, err := protojson.MarshalOptions{Indent: " "}.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The workflow replays the histories recorded in testdata (go test
// -record, with a dev server): a change that breaks determinism fails.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no recorded history in testdata")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			temporal.RegisterWorkflow(r)
			if err := r.ReplayWorkflowHistoryFromJSONFile(quietLogger(), f); err != nil {
				t.Errorf("replaying %s: %v", f, err)
			}
		})
	}
}
