package temporal_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/temporal"
	"github.com/robby-go/robby/temporal/temporaltest"
)

// The system prompts of the team the worker process serves (workerTeam).
const (
	triageSystem  = "You are triage: you route the user."
	billingSystem = "You are billing: you handle refunds."
)

// A team in a durable run on the real dev server: triage hands the
// conversation over to billing (HistoryNone), and billing's tool call runs
// on billing's tools. Its worker is killed in the middle of that call: the
// other worker finishes with billing. The next run, given the conversation
// and its agents, goes straight to billing.
func TestTeamWorkerKilled(t *testing.T) {
	addr := temporaltest.StartServer(t)
	model := robbytest.NewServer()
	defer model.Close()
	model.Reply(
		robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"a refund"}`)),
		robbytest.ToolCalls(robbytest.Call("slow_step", `{}`)),
		robbytest.Text("Refunded order 7."),
		robbytest.Text("Refunded order 8 too."),
	)
	queue := "team-" + t.Name()
	marker := filepath.Join(t.TempDir(), "calls")
	team := workerTeam + "=1"
	first := startWorker(t, addr, model.URL, queue, marker, true, true, false, team)
	c := dial(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := temporal.Start(ctx, c, client.StartWorkflowOptions{ID: queue, TaskQueue: queue},
		temporal.Request{Agent: "calc", Prompt: "A refund for order 7, please.", HeartbeatTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	waitForLines(t, marker, 1) // billing's step runs on the first worker
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	startWorker(t, addr, model.URL, queue, marker, false, true, false, team)
	res, err := run.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []robby.Transfer{{From: "triage", To: "billing", Reason: "a refund"}}
	if res.Text != "Refunded order 7." || res.Agent != "billing" || !slices.Equal(res.Handoffs, want) || res.Turns != 3 {
		t.Errorf("result: text %q, agent %q, handoffs %v, %d turns", res.Text, res.Agent, res.Handoffs, res.Turns)
	}
	if len(res.Agents) != len(res.Messages) || res.Agents[0] != "triage" || res.Agents[len(res.Agents)-1] != "billing" {
		t.Errorf("agents %q of %d messages", res.Agents, len(res.Messages))
	}
	reqs := model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	if got := systemOf(reqs[0]); got != triageSystem {
		t.Errorf("first request's system prompt %q, want triage's", got)
	}
	// HistoryNone: billing's first request holds its system prompt and the note, no more.
	if m := reqs[1].Messages; len(m) != 2 || m[0].Content != billingSystem ||
		m[1].Content != "Agent triage handed the conversation over to you. Reason: a refund" {
		t.Errorf("billing's first request holds %+v", m)
	}
	if got := systemOf(reqs[2]); got != billingSystem || !strings.Contains(reqs[2].Messages[len(reqs[2].Messages)-1].Content, "step done") {
		t.Errorf("the last request: system %q, messages %+v", got, reqs[2].Messages)
	}
	p, err := run.Progress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(p.Events, func(e robby.Event) bool { return e.Kind == robby.EventHandoff })
	if p.Agent != "billing" || i < 0 || *p.Events[i].Transfer != want[0] {
		t.Errorf("progress: agent %q, events %+v", p.Agent, p.Events)
	}
	for _, e := range p.Events[i+1:] { // billing's tool call, its result, its answer
		if e.Kind != robby.EventTurnEnd && e.Agent != "billing" {
			t.Errorf("after the handoff, a %s event of agent %q", e.Kind, e.Agent)
		}
	}

	next, err := temporal.Start(ctx, c, client.StartWorkflowOptions{ID: queue + "-next", TaskQueue: queue},
		temporal.Request{Agent: "calc", Messages: res.Messages, Agents: res.Agents, Prompt: "And order 8?"})
	if err != nil {
		t.Fatal(err)
	}
	res2, err := next.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reqs = model.Requests()
	if res2.Agent != "billing" || res2.Text != "Refunded order 8 too." || len(res2.Handoffs) != 0 || systemOf(reqs[3]) != billingSystem {
		t.Errorf("the next run: agent %q, text %q, handoffs %v, system %q", res2.Agent, res2.Text, res2.Handoffs, systemOf(reqs[3]))
	}
}

func systemOf(r robbytest.Request) string {
	if len(r.Messages) == 0 || r.Messages[0].Role != "system" {
		return ""
	}
	return r.Messages[0].Content
}
