package robby

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// newTeam builds triage (the root) and billing on srv. triage hands over to
// billing with policy; billing may hand back.
func newSupportTeam(t *testing.T, srv *robbytest.Server, policy HandoffHistory, billingOpts ...Option) *Agent {
	t.Helper()
	billing := newTestAgent(t, srv, append([]Option{WithName("billing"), WithDescription("Refunds and invoices"),
		WithSystem("You bill."), WithHandoffs(Handoff{To: "triage"})}, billingOpts...)...)
	return newTestAgent(t, srv, WithName("triage"), WithDescription("Routes the user"), WithSystem("You route."),
		WithHandoffs(Handoff{To: "billing", History: policy}), WithTeam(billing))
}

// messagesOf returns the messages of a request's body as sent.
func messagesOf(t *testing.T, req robbytest.Request) string {
	t.Helper()
	var body struct{ Messages json.RawMessage }
	require.NoError(t, json.Unmarshal(req.Body, &body))
	return string(body.Messages)
}

func TestHandoffHistoryPolicies(t *testing.T) {
	note := `{"role":"user","content":"Agent triage handed the conversation over to you. Reason: a refund"}`
	for _, tc := range []struct {
		policy HandoffHistory
		args   string
		want   string // billing's first request's messages
	}{
		{HistoryAll, `{"reason":"a refund"}`, `[{"content":"You bill.","role":"system"},` +
			`{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello."},` +
			`{"role":"user","content":"Refund order 7"},` + note + `]`},
		{HistorySummary, `{"reason":"a refund","summary":"The user wants order 7 refunded."}`,
			`[{"content":"You bill.","role":"system"},{"role":"user","content":"Agent triage handed the conversation over to you. Reason: a refund\nSummary of the conversation so far: The user wants order 7 refunded."}]`},
		{HistoryNone, `{"reason":"a refund"}`, `[{"content":"You bill.","role":"system"},` + note + `]`},
	} {
		t.Run(fmt.Sprint(tc.policy), func(t *testing.T) {
			srv := newServer(t)
			triage := newSupportTeam(t, srv, tc.policy)
			srv.Reply(robbytest.Text("Hello."),
				robbytest.ToolCalls(robbytest.Call("transfer_to_billing", tc.args)).WithText("Let me transfer you."),
				robbytest.Text("Refunded."))
			_, err := triage.Run(t.Context(), "Hi")
			require.NoError(t, err)
			res, err := triage.Run(t.Context(), "Refund order 7")
			require.NoError(t, err)
			assert.Equal(t, "Refunded.", res.Text)
			assert.Equal(t, "billing", res.Agent)
			assert.Equal(t, []Transfer{{From: "triage", To: "billing", Reason: "a refund"}}, res.Handoffs)
			assert.Equal(t, 2, res.Turns)
			reqs := srv.Requests()
			require.Len(t, reqs, 3)
			assert.Equal(t, []string{"transfer_to_billing"}, reqs[1].Tools)
			assert.Equal(t, tc.want, messagesOf(t, reqs[2]))
			assert.Equal(t, []string{"transfer_to_triage"}, reqs[2].Tools)
			// The root's conversation is the whole record, chatter included.
			assert.Len(t, triage.Messages(), 8)
			checkConsistent(t, triage.Messages())
		})
	}
}

func TestHandoffToolSchema(t *testing.T) {
	type escalation struct {
		Order    int    `json:"order"`
		Severity string `json:"severity" enum:"low,high"`
	}
	srv := newServer(t)
	billing := newTestAgent(t, srv, WithName("billing"), WithDescription("Refunds and invoices"))
	triage := newTestAgent(t, srv, WithName("triage"), WithTeam(billing),
		WithHandoffs(Handoff{To: "billing", History: HistorySummary, Input: escalation{}}))
	srv.Reply(robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"r","summary":"s","input":{"order":7,"severity":"urgent"}}`)),
		robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"r","summary":"s","input":{"order":7,"severity":"high"}}`)),
		robbytest.Text("Escalated."))
	res, err := triage.Run(t.Context(), "Refund!")
	require.NoError(t, err)
	assert.Equal(t, "billing", res.Agent)
	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	var body struct {
		Tools []struct{ Function json.RawMessage }
	}
	require.NoError(t, json.Unmarshal(reqs[0].Body, &body))
	require.Len(t, body.Tools, 1)
	assert.JSONEq(t, `{"name":"transfer_to_billing","description":"Hand the conversation over to billing: Refunds and invoices",
		"parameters":{"type":"object","additionalProperties":false,"required":["reason","summary","input"],"properties":{
		"reason":{"type":"string","description":"why billing takes over, with what it needs to know"},
		"summary":{"type":"string","description":"a short summary of the conversation so far"},
		"input":{"type":"object","additionalProperties":false,"required":["order","severity"],"properties":{
			"order":{"type":"integer"},"severity":{"type":"string","enum":["low","high"]}}}}}}`, string(body.Tools[0].Function))
	// The invalid input is an error the model reads; triage keeps the conversation.
	second := reqs[1].Messages
	assert.Contains(t, second[len(second)-1].Content, "Error: ")
	last := reqs[2].Messages
	assert.Equal(t, "Agent triage handed the conversation over to you. Reason: r\nSummary of the conversation so far: s\nInput: {\"order\":7,\"severity\":\"high\"}", last[len(last)-1].Content)
}

func TestHandoffReturnRule(t *testing.T) {
	t.Run("the agent that answered keeps it", func(t *testing.T) {
		srv := newServer(t)
		triage := newSupportTeam(t, srv, HistoryAll)
		srv.Reply(robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"r"}`)), robbytest.Text("Refunded."),
			robbytest.Text("Your invoice is sent."))
		_, err := triage.Run(t.Context(), "Refund")
		require.NoError(t, err)
		res, err := triage.Run(t.Context(), "And the invoice?")
		require.NoError(t, err)
		assert.Equal(t, "billing", res.Agent)
		assert.Empty(t, res.Handoffs)
		assert.Equal(t, "You bill.", srv.Requests()[2].Messages[0].Content)
		clone := triage.Clone() // the active agent goes with the conversation
		srv.Reply(robbytest.Text("Yes."))
		res, err = clone.Run(t.Context(), "Sure?")
		require.NoError(t, err)
		assert.Equal(t, "billing", res.Agent)
		triage.Reset()
		srv.Reply(robbytest.Text("Hi."))
		res, err = triage.Run(t.Context(), "Hello")
		require.NoError(t, err)
		assert.Equal(t, "triage", res.Agent, "a reset conversation starts at the root")
	})
	t.Run("return to root", func(t *testing.T) {
		srv := newServer(t)
		triage := newSupportTeam(t, srv, HistoryNone, WithReturnToRoot())
		srv.Reply(robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"r"}`)), robbytest.Text("Refunded."),
			robbytest.Text("Anything else?"))
		_, err := triage.Run(t.Context(), "Refund")
		require.NoError(t, err)
		res, err := triage.Run(t.Context(), "Thanks")
		require.NoError(t, err)
		assert.Equal(t, "triage", res.Agent)
		// The root sees the whole conversation but the transfer.
		assert.Equal(t, `[{"content":"You route.","role":"system"},{"role":"user","content":"Refund"},`+
			`{"role":"user","content":"Agent triage handed the conversation over to you. Reason: r"},`+
			`{"role":"assistant","content":"Refunded."},{"role":"user","content":"Thanks"}]`, messagesOf(t, srv.Requests()[2]))
	})
	t.Run("hand back", func(t *testing.T) {
		srv := newServer(t)
		triage := newSupportTeam(t, srv, HistoryAll)
		srv.Reply(robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"r"}`)),
			robbytest.ToolCalls(robbytest.Call("transfer_to_triage", `{"reason":"not billing"}`)), robbytest.Text("Routed."))
		res, err := triage.Run(t.Context(), "Help")
		require.NoError(t, err)
		assert.Equal(t, "triage", res.Agent)
		assert.Equal(t, []Transfer{{"triage", "billing", "r"}, {"billing", "triage", "not billing"}}, res.Handoffs)
		assert.Equal(t, 3, res.Turns)
		// Each message's agent: the prompt, the transfer and its result,
		// then the note to billing, billing's transfer and its result, the
		// note to triage, and triage's answer.
		assert.Equal(t, []string{"triage", "triage", "triage", "billing", "billing", "billing", "triage", "triage"}, res.Agents)
		assert.Len(t, res.Messages, len(res.Agents))
		assert.Equal(t, `[{"content":"You route.","role":"system"},{"role":"user","content":"Help"},`+
			`{"role":"user","content":"Agent triage handed the conversation over to you. Reason: r"},`+
			`{"role":"user","content":"Agent billing handed the conversation over to you. Reason: not billing"}]`, messagesOf(t, srv.Requests()[2]))
	})
}

func TestHandoffLoopEndsAtTheTurnLimit(t *testing.T) {
	srv := newServer(t)
	triage := newSupportTeam(t, srv, HistoryNone, WithMaxTurns(5))
	for range 3 {
		srv.Reply(robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"yours"}`)),
			robbytest.ToolCalls(robbytest.Call("transfer_to_triage", `{"reason":"no, yours"}`)))
	}
	res, err := triage.Run(t.Context(), "Who?")
	require.ErrorIs(t, err, ErrMaxTurns)
	assert.Equal(t, 5, res.Turns, "billing's limit counts the whole run's turns")
	// The last handoff is kept: billing holds the conversation, and answers
	// the next run.
	assert.Len(t, res.Handoffs, 5)
	assert.Equal(t, "billing", res.Agent)
	assert.Len(t, srv.Requests(), 5)
}

func TestHandoffBudgetCountsTheWholeRun(t *testing.T) {
	srv := newServer(t)
	triage := newSupportTeam(t, srv, HistoryAll, WithBudget(Budget{ModelCalls: 2}), WithTools(addTool))
	srv.Reply(robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"r"}`)),
		robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)), robbytest.Text("3"))
	res, err := triage.Run(t.Context(), "Add")
	var be *BudgetError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, 2, be.Used.ModelCalls)
	assert.Equal(t, "billing", res.Agent)
	assert.Len(t, srv.Requests(), 2)
}

// A team run in steps of one turn (WithOneTurn), as a durable workflow runs
// it: the step that hands over goes on with the target's turn; the next
// step, in a fresh clone given the messages and their agents, starts with
// the target. Its calls run on its tools (TeamAgent).
func TestHandoffInOneTurnSteps(t *testing.T) {
	srv := newServer(t)
	triage := newSupportTeam(t, srv, HistoryNone, WithTools(addTool))
	srv.Reply(robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"sums"}`)),
		robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)), robbytest.Text("3"))
	res, err := triage.Clone().Run(t.Context(), "Add", WithOneTurn(0, Budget{}))
	require.NoError(t, err)
	assert.Equal(t, "billing", res.Agent)
	assert.Equal(t, 2, res.Turns)
	assert.Equal(t, []Transfer{{From: "triage", To: "billing", Reason: "sums"}}, res.Handoffs)
	require.Len(t, res.Pending, 1)
	assert.Equal(t, "add", res.Pending[0].Name)
	assert.Len(t, res.Agents, len(res.Messages))
	assert.Nil(t, triage.TeamAgent("nobody"))
	results, err := triage.TeamAgent("billing").ExecuteToolCalls(t.Context(), res.Pending)
	require.NoError(t, err)
	require.Equal(t, "3", results[0].Output)

	next := triage.Clone()
	next.AddTeamMessages(res.Agents, res.Messages...)
	res, err = next.Resume(t.Context(), WithOneTurn(2, Budget{ModelCalls: 2}), WithToolResults(results...))
	require.NoError(t, err)
	assert.Equal(t, "3", res.Text)
	assert.Equal(t, "billing", res.Agent)
	assert.JSONEq(t, `[{"content":"You bill.","role":"system"},`+
		`{"role":"user","content":"Agent triage handed the conversation over to you. Reason: sums"},`+
		`{"role":"assistant","tool_calls":[{"id":"call_0_add","function":{"arguments":"{\"a\":1,\"b\":2}","name":"add"},"type":"function"}]},`+
		`{"content":"3","tool_call_id":"call_0_add","role":"tool"}]`, messagesOf(t, srv.Requests()[2]))
}

func TestHandoffRefused(t *testing.T) {
	srv := newServer(t)
	billing := newTestAgent(t, srv, WithName("billing"), WithSystem("You bill."))
	triage := newTestAgent(t, srv, WithName("triage"), WithTeam(billing), WithHandoffs(Handoff{To: "billing"}),
		WithApproval(func(_ context.Context, c ToolCall) error {
			if c.Name == "transfer_to_billing" {
				return errors.New("billing is closed")
			}
			return nil
		}))
	srv.Reply(robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"r"}`)),
		robbytest.ToolCalls(robbytest.Call("transfer_to_sales", `{"reason":"r"}`)),
		robbytest.Text("I cannot transfer you."))
	res, err := triage.Run(t.Context(), "Refund")
	require.NoError(t, err)
	assert.Equal(t, "triage", res.Agent)
	assert.Empty(t, res.Handoffs)
	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	denied := reqs[1].Messages[len(reqs[1].Messages)-1]
	assert.Equal(t, "tool", denied.Role)
	assert.Contains(t, denied.Content, "billing is closed")
	unknown := reqs[2].Messages[len(reqs[2].Messages)-1]
	assert.Contains(t, unknown.Content, "unknown tool")
	for _, m := range triage.Messages() {
		assert.NotContains(t, fmt.Sprint(m.OfUser), "handed the conversation", "no note: nothing switched")
	}
	checkConsistent(t, triage.Messages())
}

func TestHandoffInsideAgentTool(t *testing.T) {
	srv := newServer(t)
	support := newSupportTeam(t, srv, HistoryNone)
	planner := newTestAgent(t, srv, WithSystem("You plan."), WithTools(support.AsTool("support", "Answers customers")))
	srv.Reply(robbytest.ToolCalls(robbytest.Call("support", `{"prompt":"Refund order 7"}`)),
		robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"refund"}`)),
		robbytest.Text("Refunded."), robbytest.Text("Support refunded it."))
	var handoffs []Transfer
	for e, err := range planner.Stream(t.Context(), "Plan") {
		require.NoError(t, err)
		if in, _ := e.Innermost(); in.Kind == EventHandoff {
			handoffs = append(handoffs, *in.Transfer)
		}
	}
	assert.Equal(t, []Transfer{{"triage", "billing", "refund"}}, handoffs)
	reqs := srv.Requests()
	require.Len(t, reqs, 4)
	assert.Equal(t, "You bill.", reqs[2].Messages[0].Content)
	assert.Equal(t, "Support refunded it.", planner.Messages()[len(planner.Messages())-1].OfAssistant.Content.OfString.Value)
	assert.Len(t, support.Messages(), 1, "the team's own conversation is untouched")
}

func TestHandoffStreamEvents(t *testing.T) {
	srv := newServer(t)
	triage := newSupportTeam(t, srv, HistoryAll)
	srv.Reply(robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"refund"}`)), robbytest.Text("Done."))
	var kinds []EventKind
	var turns []int
	for e, err := range triage.Stream(t.Context(), "Refund") {
		require.NoError(t, err)
		switch e.Kind {
		case EventHandoff, EventTurnEnd, EventDone, EventToolCall, EventToolResult:
			kinds, turns = append(kinds, e.Kind), append(turns, e.Turn)
		}
		if e.Kind == EventHandoff {
			assert.Equal(t, Transfer{"triage", "billing", "refund"}, *e.Transfer)
		}
		if e.Kind == EventDone {
			assert.Equal(t, "billing", e.Result.Agent)
		}
		if e.Kind == EventToolResult {
			assert.Equal(t, "Transferred to billing.", e.ToolResult.Output, "the transfer's result, reported as any call's")
		}
	}
	assert.Equal(t, []EventKind{EventTurnEnd, EventToolCall, EventToolResult, EventHandoff, EventTurnEnd, EventDone}, kinds)
	assert.Equal(t, []int{1, 1, 1, 1, 2, 2}, turns)
}

func TestTeamErrors(t *testing.T) {
	srv := newServer(t)
	billing := newTestAgent(t, srv, WithName("billing"), WithHandoffs(Handoff{To: "sales"}))
	unnamed := newTestAgent(t, srv)
	plain := newTestAgent(t, srv, WithName("plain"))
	clash := newTestAgent(t, srv, WithName("clash"), WithTools(NewTool("transfer_to_x", "", func(context.Context, addArgs) (int, error) { return 0, nil })))
	for _, tc := range []struct {
		opts []Option
		want string
	}{
		{[]Option{WithTeam(billing)}, "the root agent has no name"},
		{[]Option{WithName("triage"), WithTeam(billing)}, `agent "billing": handoff to "sales", which is not an agent of the team`},
		{[]Option{WithName("triage"), WithTeam(unnamed)}, "agent 1 has no name"},
		{[]Option{WithName("billing"), WithTeam(billing)}, `two agents are named "billing"`},
		{[]Option{WithName("triage"), WithTeam(clash)}, `tool "transfer_to_x"`},
		{[]Option{WithName("triage"), WithHandoffs(Handoff{To: "triage"}), WithTeam(plain)}, "handoff to itself"},
		{[]Option{WithName("a b")}, "WithName"},
	} {
		_, err := New(append([]Option{WithBaseURL(srv.URL), WithModel("m")}, tc.opts...)...)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
}
