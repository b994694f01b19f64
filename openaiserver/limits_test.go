package openaiserver_test

import (
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
)

// TestRunLimitsCutTheReplyShort: a run that reaches the agent's turn limit
// or budget is a reply cut short, not a failure: what the model wrote,
// finish_reason "length" in chat completions, status "incomplete" with the
// limit as its reason in the Responses API; plain and streamed.
func TestRunLimitsCutTheReplyShort(t *testing.T) {
	for reason, limit := range map[string]robby.Option{
		"max_turns": robby.WithMaxTurns(1),
		"budget":    robby.WithBudget(robby.Budget{ModelCalls: 1}),
	} {
		t.Run(reason, func(t *testing.T) {
			upstream := newServer(t)
			url := serveResponses(t, upstream, openaiserver.Options{}, robby.WithTools(addTool), limit)
			client := clientFor(url, "k")
			lookFirst := robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)).WithText("Adding.")

			upstream.Reply(lookFirst)
			res, err := client.Chat.Completions.New(t.Context(), userParams("1+2?"))
			require.NoError(t, err)
			assert.Equal(t, "Adding.", res.Choices[0].Message.Content)
			assert.Equal(t, "length", res.Choices[0].FinishReason)

			upstream.Reply(lookFirst)
			s := client.Chat.Completions.NewStreaming(t.Context(), userParams("1+2?"))
			var acc openai.ChatCompletionAccumulator
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			require.NoError(t, s.Err())
			s.Close()
			assert.Equal(t, "Adding.", acc.Choices[0].Message.Content)
			assert.Equal(t, "length", acc.Choices[0].FinishReason)

			upstream.Reply(lookFirst)
			r, err := client.Responses.New(t.Context(), ask("1+2?", ""))
			require.NoError(t, err)
			assert.Equal(t, "incomplete", string(r.Status))
			assert.Equal(t, reason, string(r.IncompleteDetails.Reason))
			assert.Equal(t, "Adding.", r.OutputText())

			upstream.Reply(lookFirst)
			kinds, text, last := streamed(t, client, ask("1+2?", ""))
			assert.Equal(t, "response.incomplete", kinds[len(kinds)-1])
			assert.Equal(t, "Adding.", text)
			assert.Equal(t, reason, string(last.IncompleteDetails.Reason))
			assert.Len(t, upstream.Requests(), 4, "nothing sent past the limit")
		})
	}
}
