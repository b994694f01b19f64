package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
)

// testAgents checks that each message keeps the agent that wrote it
// ([robby.Message.Agent]), in its conversation and in a fork.
func testAgents(t *testing.T, s robby.Store) {
	ctx := context.Background()
	create(t, s, "u", "a", "Team")
	by := func(m robby.Message, agent string) robby.Message { m.Agent = agent; return m }
	require.NoError(t, s.Append(ctx, "u", "a", 0, by(Chat("refund"), "triage"), answer("over to billing", robby.Usage{}),
		by(Chat("note"), "billing")))
	require.NoError(t, s.Append(ctx, "u", "a", 3, robby.Message{Error: "stopped", Agent: "billing"}))
	agents := func(id string) []string {
		_, msgs, err := s.Load(ctx, "u", id)
		require.NoError(t, err)
		var names []string
		for _, m := range msgs {
			names = append(names, m.Agent)
		}
		return names
	}
	assert.Equal(t, []string{"triage", "", "billing", "billing"}, agents("a"))
	f, err := s.Fork(ctx, robby.Conversation{User: "u"}, "a", 3)
	require.NoError(t, err)
	require.NoError(t, s.Append(ctx, "u", f.ID, 3, by(answer("refunded", robby.Usage{}), "billing")))
	assert.Equal(t, []string{"triage", "", "billing", "billing"}, agents(f.ID))
}
