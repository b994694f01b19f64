package openaiserver_test

import (
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
)

// usageReplies are two model calls of one run that report cached prompt
// tokens and reasoning tokens: 30 tokens in (12 cached), 11 out (5 of
// reasoning).
func usageReplies() []robbytest.Reply {
	return []robbytest.Reply{
		robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)).WithUsage(10, 5).WithUsageDetails(4, 2),
		robbytest.Text("3").WithUsage(20, 6).WithUsageDetails(8, 3),
	}
}

// The endpoint reports the cached and reasoning tokens of a run where
// OpenAI's own clients read them, in both APIs, plain and streamed.
func TestEndpointUsageDetails(t *testing.T) {
	upstream := newServer(t)
	url := serveResponses(t, upstream, openaiserver.Options{Store: newStore(t)}, robby.WithTools(addTool))
	client := clientFor(url, "k")

	t.Run("chat completions", func(t *testing.T) {
		upstream.Reply(usageReplies()...)
		res, err := client.Chat.Completions.New(t.Context(), userParams("1+2?"))
		require.NoError(t, err)
		checkChatUsage(t, res.Usage)
	})
	t.Run("chat completions streamed", func(t *testing.T) {
		upstream.Reply(usageReplies()...)
		p := userParams("1+2?")
		p.StreamOptions.IncludeUsage = openai.Bool(true)
		s := client.Chat.Completions.NewStreaming(t.Context(), p)
		defer s.Close()
		var last openai.ChatCompletionChunk
		for s.Next() {
			last = s.Current()
		}
		require.NoError(t, s.Err())
		assert.Empty(t, last.Choices, "the usage chunk comes last")
		checkChatUsage(t, last.Usage)
	})
	t.Run("responses", func(t *testing.T) {
		upstream.Reply(usageReplies()...)
		res, err := client.Responses.New(t.Context(), ask("1+2?", ""))
		require.NoError(t, err)
		checkResponsesUsage(t, res.Usage)
	})
	t.Run("responses streamed", func(t *testing.T) {
		upstream.Reply(usageReplies()...)
		_, _, res := streamed(t, client, ask("1+2?", ""))
		checkResponsesUsage(t, res.Usage)
	})
}

// readUsage is what a client read of a run's usage: the tokens in, out
// and in all, the cached and reasoning parts, and whether the details
// holding those were sent.
type readUsage struct {
	in, out, total, cached, reasoning int64
	details                           bool
}

// usageWanted is the usage of usageReplies.
var usageWanted = readUsage{in: 30, out: 11, total: 41, cached: 12, reasoning: 5, details: true}

func checkChatUsage(t *testing.T, u openai.CompletionUsage) {
	t.Helper()
	assert.Equal(t, usageWanted, readUsage{u.PromptTokens, u.CompletionTokens, u.TotalTokens,
		u.PromptTokensDetails.CachedTokens, u.CompletionTokensDetails.ReasoningTokens,
		u.PromptTokensDetails.JSON.CachedTokens.Valid() && u.CompletionTokensDetails.JSON.ReasoningTokens.Valid()})
}

func checkResponsesUsage(t *testing.T, u responses.ResponseUsage) {
	t.Helper()
	assert.Equal(t, usageWanted, readUsage{u.InputTokens, u.OutputTokens, u.TotalTokens,
		u.InputTokensDetails.CachedTokens, u.OutputTokensDetails.ReasoningTokens,
		u.InputTokensDetails.JSON.CachedTokens.Valid() && u.OutputTokensDetails.JSON.ReasoningTokens.Valid()})
}
