package openaiserver_test

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
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
