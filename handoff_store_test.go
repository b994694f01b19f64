package robby_test

import (
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

// supportTeam builds triage and billing on srv, as a new process would.
func supportTeam(t *testing.T, srv *robbytest.Server) *robby.Agent {
	t.Helper()
	base := []robby.Option{robby.WithBaseURL(srv.URL), robby.WithAPIKey(""), robby.WithModel("m"),
		robby.WithRequestOptions(option.WithMaxRetries(0))}
	billing, err := robby.New(append(base, robby.WithName("billing"), robby.WithSystem("You bill."),
		robby.WithHandoffs(robby.Handoff{To: "triage"}))...)
	require.NoError(t, err)
	t.Cleanup(func() { billing.Close() })
	triage, err := robby.New(append(base, robby.WithName("triage"), robby.WithSystem("You route."), robby.WithTeam(billing),
		robby.WithHandoffs(robby.Handoff{To: "billing", History: robby.HistoryNone}))...)
	require.NoError(t, err)
	t.Cleanup(func() { triage.Close() })
	return triage
}

func TestHandoffStoredWithTheConversation(t *testing.T) {
	store := openStore(t)
	srv := robbytest.NewServer()
	t.Cleanup(srv.Close)
	srv.Reply(robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"a refund"}`)).WithText("One moment."),
		robbytest.Text("Refunded."))
	res, err := supportTeam(t, srv).Run(t.Context(), "Refund order 7", robby.WithConversation(store, "alice", "c"))
	require.NoError(t, err)
	assert.Equal(t, "billing", res.Agent)

	// Another process: the conversation goes on with billing, on its view.
	srv.Reply(robbytest.Text("The invoice is sent."), robbytest.Text("Hello, I route."))
	res, err = supportTeam(t, srv).Run(t.Context(), "And the invoice?", robby.WithConversation(store, "alice", "c"))
	require.NoError(t, err)
	assert.Equal(t, "billing", res.Agent)
	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	var got []string
	for _, m := range reqs[2].Messages {
		got = append(got, m.Role+": "+m.Content)
	}
	assert.Equal(t, []string{"system: You bill.", "user: Agent triage handed the conversation over to you. Reason: a refund",
		"assistant: Refunded.", "user: And the invoice?"}, got)
	_, msgs, err := store.Load(t.Context(), "alice", "c")
	require.NoError(t, err)
	var agents []string
	for _, m := range msgs {
		agents = append(agents, m.Agent)
	}
	assert.Equal(t, []string{"triage", "triage", "triage", "billing", "billing", "billing", "billing"}, agents)

	// Another user's conversation of the same ID starts at the root.
	res, err = supportTeam(t, srv).Run(t.Context(), "Hi", robby.WithConversation(store, "bob", "c"))
	require.NoError(t, err)
	assert.Equal(t, "triage", res.Agent)
	assert.Equal(t, "You route.", srv.Requests()[3].Messages[0].Content)
}
