package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// nodeTeamResponse is what testdata/node_team.mjs reports of a response.
type nodeTeamResponse struct {
	ID, Status, Text string
	Items            []struct{ Type, Agent, Name, Text string }
}

// TestNodeOpenAISDKTeam: the official OpenAI Node SDK's Responses API
// against `robby serve -agents team.json -store FILE`, with a scripted
// model. triage hands over to billing, which answers, and each output item
// names its agent; the next response (previous_response_id) goes straight
// to billing. The server is SIGKILLed and started again on the same store:
// the next response still goes to billing. Another user's conversation
// starts with triage, stays with it across the restart, and cannot read
// or continue the first user's. See testdata/node_team.mjs.
func TestNodeOpenAISDKTeam(t *testing.T) {
	bench := requireNodeSDK(t)
	const model = "robby-team"
	srv := upstream(t)
	srv.Fallback(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		last := req.Messages[len(req.Messages)-1].Content
		switch {
		case req.Messages[0].Content == "You route." && strings.HasPrefix(last, "Refund"):
			return robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"a refund"}`))
		case req.Messages[0].Content == "You route.":
			return robbytest.Text("triage: " + last)
		}
		return robbytest.Text("billing: " + last)
	}))
	args := []string{"-base-url", srv.URL, "-model", model, "-agents", teamFile(t),
		"-store", filepath.Join(t.TempDir(), "chats.db"), "-token", "ada:ada-token", "-token", "eve:eve-token"}
	env := []string{"OPENAI_API_KEY=ada-token", "OTHER_API_KEY=eve-token"}
	server, base, serveLog := serveProcess(t, args...)
	_, steps := bench.run(t, serveLog, env, "node_team.mjs", base, model, "first")

	refund := nodeStep[nodeTeamResponse](t, steps, "refund")
	assert.Equal(t, "billing: Agent triage handed the conversation over to you. Reason: a refund", refund.Text)
	var agents []string
	for _, it := range refund.Items {
		agents = append(agents, it.Type+" "+it.Name+" "+it.Agent)
	}
	assert.Equal(t, []string{"message  billing"}, agents, "billing's answer, the transfer's steps not shown (no -show-tools)")
	next := nodeStep[nodeTeamResponse](t, steps, "next")
	assert.Equal(t, "billing: And order 8?", next.Text, "straight to billing")
	other := nodeStep[struct {
		nodeTeamResponse
		Read, Continued int
	}](t, steps, "other")
	assert.Equal(t, "triage: Hello.", other.Text, "another user starts with triage")
	assert.Equal(t, 404, other.Read, "another user read the response")
	assert.Equal(t, 404, other.Continued, "another user continued the response")

	require.NoError(t, server.Process.Kill()) // SIGKILL
	server.Wait()
	_, base, serveLog = serveProcess(t, args...)
	_, steps = bench.run(t, serveLog, env, "node_team.mjs", base, model, "again", next.ID, other.ID)
	after := nodeStep[nodeTeamResponse](t, steps, "after")
	assert.Equal(t, "billing: And order 9?", after.Text, "still billing after the restart")
	assert.Equal(t, "billing", after.Items[len(after.Items)-1].Agent)
	otherAfter := nodeStep[nodeTeamResponse](t, steps, "other_after")
	assert.Equal(t, "triage: Still there?", otherAfter.Text, "the other user's conversation stays with triage")
	assert.Equal(t, "triage", otherAfter.Items[len(otherAfter.Items)-1].Agent)
	assert.Len(t, srv.Requests(), 6, "one model call a response, two for the handoff")
	assert.NotContains(t, serveLog.String(), "ada-token", "a token in the log")
}
