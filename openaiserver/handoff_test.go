package openaiserver_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/robbytest/agenttest"
)

// TestResponsesNameTheAgent: a team's triage hands over to billing; the
// response's message says billing wrote it, as POST returns it, as GET
// reads it from the store, and at the end of a stream. The next response
// goes straight to billing.
func TestResponsesNameTheAgent(t *testing.T) {
	hs := httptest.NewServer(openaiserver.New(map[string]*robby.Agent{"robby": agenttest.NewTeam(t)},
		openaiserver.Options{Store: newStore(t)}))
	t.Cleanup(hs.Close)
	client := clientFor(hs.URL, "k")
	agentOf := func(r *responses.Response) []string {
		var agents []string
		for _, item := range r.Output {
			var robbys struct{ Agent string } // robby's addition to an output item
			require.NoError(t, json.Unmarshal([]byte(item.RawJSON()), &robbys))
			agents = append(agents, robbys.Agent)
		}
		return agents
	}

	first, err := client.Responses.New(t.Context(), ask("A refund for order 7.", ""))
	require.NoError(t, err)
	assert.Equal(t, "Order 7 is refunded.", first.OutputText())
	assert.Equal(t, []string{"billing"}, agentOf(first))
	got, err := client.Responses.Get(t.Context(), first.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Equal(t, []string{"billing"}, agentOf(got), "as stored")

	_, _, next := streamed(t, client, ask("And the invoice?", first.ID))
	assert.Equal(t, []string{"billing"}, agentOf(&next), "billing keeps the conversation")
}

// TestResponsesStreamNamesTheAgent: the items a stream opens and closes
// before response.completed (output_item.added and output_item.done) name
// their agent too: triage's words before it hands over, then billing's
// answer.
func TestResponsesStreamNamesTheAgent(t *testing.T) {
	srv := agenttest.NewServer(t)
	srv.Fallback(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		if strings.Contains(req.Messages[0].Content, "route") {
			return robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"a refund"}`)).WithText("Let me transfer you.")
		}
		return robbytest.Text("Order 7 is refunded.")
	}))
	billing := agenttest.New(t, srv, robby.WithName("billing"), robby.WithSystem("You handle refunds."))
	triage := agenttest.New(t, srv, robby.WithName("triage"), robby.WithSystem("You route the user."),
		robby.WithHandoffs(robby.Handoff{To: "billing"}), robby.WithTeam(billing))
	hs := httptest.NewServer(openaiserver.New(map[string]*robby.Agent{"robby": triage}, openaiserver.Options{}))
	t.Cleanup(hs.Close)
	client := clientFor(hs.URL, "k")
	s := client.Responses.NewStreaming(t.Context(), ask("A refund for order 7.", ""))
	defer s.Close()
	var items, completed []string
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "response.output_item.added", "response.output_item.done":
			var robbys struct{ Agent string }
			require.NoError(t, json.Unmarshal([]byte(ev.Item.RawJSON()), &robbys))
			items = append(items, ev.Type+" "+robbys.Agent)
		case "response.completed":
			for _, item := range ev.Response.Output {
				var robbys struct{ Agent string }
				require.NoError(t, json.Unmarshal([]byte(item.RawJSON()), &robbys))
				completed = append(completed, robbys.Agent)
			}
		}
	}
	require.NoError(t, s.Err())
	assert.Equal(t, []string{"response.output_item.added triage", "response.output_item.done triage",
		"response.output_item.added billing", "response.output_item.done billing"}, items)
	assert.Equal(t, []string{"triage", "billing"}, completed, "as response.completed says")
}
