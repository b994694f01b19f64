package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// TestNodeOpenAISDKResponses: the official OpenAI Node SDK's Responses
// API against `robby serve -store`: a conversation continued by
// previous_response_id, streamed and not, a function of the client's,
// the input items listed page by page, another user kept out, a response
// deleted. See
// testdata/node_responses.mjs.
func TestNodeOpenAISDKResponses(t *testing.T) {
	bench := requireNodeSDK(t)
	const model = "robby-agent"
	// lastIs answers when the last message the model was sent is the one
	// expected, and otherwise says what it was sent.
	lastIs := func(role, content, answer string) robbytest.Reply {
		return robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			last := req.Messages[len(req.Messages)-1]
			if last.Role != role || last.Content != content {
				return robbytest.Text("the model was sent " + last.Role + ": " + last.Content)
			}
			return robbytest.Text(answer).WithDelay(10 * time.Millisecond)
		})
	}
	srv := upstream(t,
		robbytest.Text("Hello Ada."),
		lastIs("user", "What is my name?", "Your name is Ada."),
		robbytest.ToolCalls(robbytest.Call("get_location", `{}`)),
		lastIs("tool", "Lisbon, Portugal", "You are in Lisbon."),
	)
	store := filepath.Join(t.TempDir(), "responses.db")
	base, serveLog := serveInProcess(t, "-base-url", srv.URL, "-model", model, "-store", store,
		"-token", "ada:ada-token", "-token", "eve:eve-token")
	_, steps := bench.run(t, serveLog, []string{"OPENAI_API_KEY=ada-token", "OTHER_API_KEY=eve-token"}, "node_responses.mjs", base, model)

	first := nodeStep[struct{ ID, Object, Status, Text, Model string }](t, steps, "first")
	assert.Equal(t, "response", first.Object)
	assert.Equal(t, "completed", first.Status)
	assert.Equal(t, "Hello Ada.", first.Text)
	assert.Equal(t, model, first.Model)

	second := nodeStep[struct {
		Types                              []string
		Deltas, ID, Previous, Status, Text string
	}](t, steps, "second")
	assert.Equal(t, "Your name is Ada.", second.Deltas)
	assert.Equal(t, "Your name is Ada.", second.Text)
	assert.Equal(t, first.ID, second.Previous)
	assert.Equal(t, "completed", second.Status)
	require.NotEmpty(t, second.Types)
	assert.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"},
		second.Types[:4])
	assert.Equal(t, []string{"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"},
		second.Types[len(second.Types)-4:])

	tool := nodeStep[struct {
		Call struct{ Name, Arguments string }
		Text string
	}](t, steps, "tool")
	assert.Equal(t, "get_location", tool.Call.Name)
	assert.Equal(t, "You are in Lisbon.", tool.Text)

	items := nodeStep[struct {
		Items            []string
		Previous, Status string
		TotalTokens      int `json:"total_tokens"`
	}](t, steps, "items")
	assert.Equal(t, []string{"user: My name is Ada.", "assistant: Hello Ada.", "user: What is my name?",
		"assistant: Your name is Ada.", "user: Where am I?", "function_call", "function_call_output"}, items.Items)
	assert.NotEmpty(t, items.Previous)
	assert.Equal(t, "completed", items.Status)
	assert.Positive(t, items.TotalTokens)

	retrieve := nodeStep[struct {
		ID, Text      string
		Other         int `json:"other"`
		OtherContinue int `json:"other_continue"`
	}](t, steps, "retrieve")
	assert.Equal(t, first.ID, retrieve.ID)
	assert.Equal(t, "Hello Ada.", retrieve.Text)
	assert.Equal(t, 404, retrieve.Other, "another user read the response")
	assert.Equal(t, 404, retrieve.OtherContinue, "another user continued the response")

	deleted := nodeStep[struct{ After int }](t, steps, "delete")
	assert.Equal(t, 404, deleted.After)

	reqs := srv.Requests()
	require.Len(t, reqs, 4, "one model call per response; none for the other user")
	assert.Len(t, reqs[1].Messages, 3, "the stored conversation, then the new question")
	assert.NotContains(t, serveLog.String(), "ada-token", "a token in the log")
	assert.NotContains(t, serveLog.String(), "eve-token", "a token in the log")
}

// TestNodeOpenAISDKConversations: the official OpenAI Node SDK's
// Conversations API against `robby serve -store`: a conversation made
// with items and metadata, items added and listed page by page, a
// response run in it, and another user's token kept out of all of it. See
// testdata/node_conversations.mjs.
func TestNodeOpenAISDKConversations(t *testing.T) {
	bench := requireNodeSDK(t)
	const model = "robby-agent"
	srv := upstream(t, robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		var said []string
		for _, m := range req.Messages {
			said = append(said, m.Role+": "+m.Content)
		}
		if strings.Join(said, "|") != "user: My name is Ada.|assistant: Hello Ada.|user: What is my name?" {
			return robbytest.Text("the model was sent " + strings.Join(said, "|"))
		}
		return robbytest.Text("Your name is Ada.")
	}))
	base, serveLog := serveInProcess(t, "-base-url", srv.URL, "-model", model, "-store", filepath.Join(t.TempDir(), "robby.db"),
		"-token", "ada:ada-token", "-token", "eve:eve-token")
	_, steps := bench.run(t, serveLog, []string{"OPENAI_API_KEY=ada-token", "OTHER_API_KEY=eve-token"}, "node_conversations.mjs", base, model)

	created := nodeStep[struct {
		ID       string
		Metadata map[string]string
	}](t, steps, "create")
	assert.Equal(t, map[string]string{"topic": "names"}, created.Metadata)
	added := nodeStep[struct {
		Items int
		First bool
	}](t, steps, "add")
	assert.Equal(t, 1, added.Items)
	assert.True(t, added.First)
	respond := nodeStep[struct{ Text, Conversation string }](t, steps, "respond")
	assert.Equal(t, "Your name is Ada.", respond.Text)
	assert.Equal(t, created.ID, respond.Conversation)
	list := nodeStep[struct{ Items []string }](t, steps, "list")
	assert.Equal(t, []string{"user: My name is Ada.", "assistant: Hello Ada.", "user: What is my name?", "assistant: Your name is Ada."},
		list.Items, "four items, two a page")
	other := nodeStep[map[string]int](t, steps, "other")
	assert.Equal(t, map[string]int{"get": 404, "list": 404, "add": 404, "respond": 404, "delete": 404}, other)
	deleted := nodeStep[struct {
		Deleted bool
		After   int
	}](t, steps, "delete")
	assert.True(t, deleted.Deleted)
	assert.Equal(t, 404, deleted.After)
	assert.Len(t, srv.Requests(), 1, "one model call; none for the other user")
}
