package robby

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// askUser is a tool a person answers, outside the run.
var askUser = openai.FunctionDefinitionParam{
	Name:        "ask_user",
	Description: openai.String("Ask the user a question"),
	Parameters: openai.FunctionParameters{"type": "object",
		"properties": map[string]any{"question": map[string]any{"type": "string"}}},
}

// runOrStream runs the agent plainly or streamed, with the prompt or,
// when resume is set, without one, and returns the result of the run.
func runOrStream(t *testing.T, a *Agent, stream, resume bool, prompt string, opts ...RunOption) (*Result, error) {
	t.Helper()
	switch {
	case !stream && !resume:
		return a.Run(t.Context(), prompt, opts...)
	case !stream:
		return a.Resume(t.Context(), opts...)
	}
	events := a.Stream(t.Context(), prompt, opts...)
	if resume {
		events = a.ResumeStream(t.Context(), opts...)
	}
	var last Event
	var lastErr error
	for ev, err := range events {
		last, lastErr = ev, err
	}
	require.Equal(t, EventDone, last.Kind)
	return last.Result, lastErr
}

func TestCallerToolPausesTheRunAndResumeAnswers(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			srv := newServer(t)
			srv.Reply(
				robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`), robbytest.Call("ask_user", `{"question":"Which colour?"}`)),
				robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)),
				robbytest.Text("3, in blue."),
			)
			a := newTestAgent(t, srv, WithTools(addTool))

			res, err := runOrStream(t, a, stream, false, "Add 1 and 2, in the user's colour", WithCallerTools(askUser))
			require.NoError(t, err)
			require.Len(t, res.Pending, 1)
			call := res.Pending[0]
			assert.Equal(t, "ask_user", call.Name)
			assert.JSONEq(t, `{"question":"Which colour?"}`, call.Arguments)
			assert.Empty(t, res.ToolCalls, "the agent's own call of the paused turn is not run")
			assert.Equal(t, 1, res.Turns)
			assert.ElementsMatch(t, []string{"add", "ask_user"}, srv.Requests()[0].Tools)
			msgs := a.Messages()
			last := msgs[len(msgs)-1].OfAssistant
			require.NotNil(t, last, "the conversation keeps the paused turn")
			require.Len(t, last.ToolCalls, 1, "with only the caller's call")
			assert.Equal(t, call.ID, *last.ToolCalls[0].GetID())

			// Later, the user answers.
			res, err = runOrStream(t, a, stream, true, "", WithToolResults(ToolResult{Call: ToolCall{ID: call.ID}, Output: "blue"}),
				WithCallerTools(askUser))
			require.NoError(t, err)
			assert.Equal(t, "3, in blue.", res.Text)
			assert.Empty(t, res.Pending)
			require.Len(t, res.ToolCalls, 1)
			assert.Equal(t, "3", res.ToolCalls[0].Output)

			reqs := srv.Requests()
			require.Len(t, reqs, 3)
			sent := reqs[1].Messages
			assert.Equal(t, "assistant", sent[1].Role)
			assert.Equal(t, robbytest.Message{Role: "tool", Content: "blue", ToolCallID: call.ID}, sent[2], "the answer, no new prompt")
			require.Len(t, res.Messages, 4, "the answer, then the turns of the resumed run")
			assert.NotNil(t, res.Messages[0].OfTool)
			checkConsistent(t, a.Messages())
		})
	}
}

func TestUnansweredCallsGetAResultSayingSo(t *testing.T) {
	srv := newServer(t)
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("ask_user", `{"question":"Which colour?"}`), robbytest.Call("ask_user", `{"question":"Which size?"}`)),
		robbytest.Text("Let us pick blue, size M."),
	)
	a := newTestAgent(t, srv)
	res, err := a.Run(t.Context(), "Pick a shirt", WithCallerTools(askUser))
	require.NoError(t, err)
	require.Len(t, res.Pending, 2)

	// The caller answers one call, with an error, and moves on.
	res, err = a.Run(t.Context(), "Never mind, choose yourself",
		WithToolResults(ToolResult{Call: res.Pending[1], Err: errors.New("the user left")}))
	require.NoError(t, err)
	assert.Equal(t, "Let us pick blue, size M.", res.Text)
	sent := srv.Requests()[1].Messages
	require.Len(t, sent, 5)
	assert.Equal(t, "tool", sent[2].Role)
	assert.Equal(t, "Error: no result was given for this call", sent[2].Content)
	assert.Equal(t, "Error: the user left", sent[3].Content)
	assert.Equal(t, robbytest.Message{Role: "user", Content: "Never mind, choose yourself"}, sent[4])
	checkConsistent(t, a.Messages())
}

func TestResumeInAnotherAgentFromSavedMessages(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.ToolCalls(robbytest.Call("ask_user", `{"question":"Which colour?"}`)), robbytest.Text("Blue it is."))
	first := newTestAgent(t, srv, WithSystem("You sell shirts."))
	res, err := first.Run(t.Context(), "Pick a shirt", WithCallerTools(askUser))
	require.NoError(t, err)
	saved, err := json.Marshal(first.Messages())
	require.NoError(t, err)
	pending := res.Pending[0]
	require.NoError(t, first.Close())

	var msgs []openai.ChatCompletionMessageParamUnion
	require.NoError(t, json.Unmarshal(saved, &msgs))
	later := newTestAgent(t, srv)
	later.SetMessages(msgs)
	res, err = later.Resume(t.Context(), WithToolResults(ToolResult{Call: pending, Output: "blue"}))
	require.NoError(t, err)
	assert.Equal(t, "Blue it is.", res.Text)
	sent := srv.Requests()[1].Messages
	assert.Equal(t, robbytest.Message{Role: "tool", Content: "blue", ToolCallID: pending.ID}, sent[len(sent)-1])
	checkConsistent(t, later.Messages())
}

func TestInvalidRunOptionsChangeNothing(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.ToolCalls(robbytest.Call("ask_user", `{}`)))
	a := newTestAgent(t, srv, WithTools(addTool))
	res, err := a.Run(t.Context(), "Ask", WithCallerTools(askUser))
	require.NoError(t, err)
	before := a.Messages()

	for name, opts := range map[string][]RunOption{
		"unknown call": {WithToolResults(ToolResult{Call: ToolCall{ID: "nope"}})},
		"two results":  {WithToolResults(ToolResult{Call: res.Pending[0]}, ToolResult{Call: res.Pending[0]})},
		"own name":     {WithCallerTools(openai.FunctionDefinitionParam{Name: "add"})},
		"messages":     {WithRunParams(openai.ChatCompletionNewParams{Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := a.Run(t.Context(), "again", opts...)
			assert.Error(t, err)
			_, err = a.Resume(t.Context(), opts...)
			assert.Error(t, err)
			assert.Equal(t, before, a.Messages())
		})
	}
	assert.Len(t, srv.Requests(), 1, "nothing sent")
}

func TestRunParamsAreLaidOverTheAgentsForOneRun(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.Text("one"), robbytest.Text("two"))
	base := openai.ChatCompletionNewParams{Temperature: openai.Float(0.2), Seed: openai.Int(1)}
	base.SetExtraFields(map[string]any{"top_k": 40})
	a := newTestAgent(t, srv, WithParams(base))

	over := openai.ChatCompletionNewParams{Model: "other-model", Temperature: openai.Float(0.9), MaxTokens: openai.Int(50)}
	over.SetExtraFields(map[string]any{"min_p": 0.1})
	for ev, err := range a.Stream(t.Context(), "hi", WithRunParams(over)) {
		require.NoError(t, err, ev)
	}
	_, err := a.Run(t.Context(), "again")
	require.NoError(t, err)

	var first, second map[string]any
	require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &first))
	require.NoError(t, json.Unmarshal(srv.Requests()[1].Body, &second))
	assert.Equal(t, "other-model", first["model"])
	assert.Equal(t, 0.9, first["temperature"])
	assert.EqualValues(t, 50, first["max_tokens"])
	assert.EqualValues(t, 1, first["seed"], "the agent's parameters the run does not set stay")
	assert.EqualValues(t, 40, first["top_k"])
	assert.Equal(t, 0.1, first["min_p"])
	assert.Equal(t, map[string]any{"include_usage": true}, first["stream_options"])
	assert.Equal(t, true, first["stream"])

	assert.Equal(t, "test-model", second["model"], "the next run has the agent's parameters again")
	assert.Equal(t, 0.2, second["temperature"])
	assert.NotContains(t, second, "max_tokens")
	assert.NotContains(t, second, "min_p")
}

// TestEmptyRunParamsChangeNothing: a server passes on each request's
// parameters, most often none. Those runs send the agent's parameters, as a
// run without the option does, extra fields and all.
func TestEmptyRunParamsChangeNothing(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.Text("one"), robbytest.Text("two"))
	base := openai.ChatCompletionNewParams{Temperature: openai.Float(0.2), Seed: openai.Int(1)}
	base.SetExtraFields(map[string]any{"top_k": 40})
	a := newTestAgent(t, srv, WithParams(base))
	for ev, err := range a.Clone().Stream(t.Context(), "hi", WithRunParams(openai.ChatCompletionNewParams{})) {
		require.NoError(t, err, ev)
	}
	for ev, err := range a.Clone().Stream(t.Context(), "hi") {
		require.NoError(t, err, ev)
	}
	var with, without map[string]any
	require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &with))
	require.NoError(t, json.Unmarshal(srv.Requests()[1].Body, &without))
	assert.Equal(t, without, with)
	assert.EqualValues(t, 40, with["top_k"])
	assert.Equal(t, 0.2, with["temperature"])
}

func TestRunSystemIsSentWithEveryTurnButNotKept(t *testing.T) {
	srv := newServer(t)
	srv.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)), robbytest.Text("3"), robbytest.Text("ok"))
	a := newTestAgent(t, srv, WithSystem("You add."), WithTools(addTool))
	res, err := a.Run(t.Context(), "1+2?", WithRunSystem("Context: numbers are small."))
	require.NoError(t, err)
	_, err = a.Run(t.Context(), "thanks")
	require.NoError(t, err)

	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	for _, r := range reqs[:2] {
		assert.Equal(t, robbytest.Message{Role: "system", Content: "You add."}, r.Messages[0])
		assert.Equal(t, robbytest.Message{Role: "system", Content: "Context: numbers are small."}, r.Messages[1])
		assert.Equal(t, robbytest.Message{Role: "user", Content: "1+2?"}, r.Messages[2])
	}
	assert.Len(t, reqs[1].Messages, 5)
	assert.Len(t, reqs[2].Messages, 6, "the next run sends the conversation without it")
	assert.Len(t, res.Messages, 4)
	for _, m := range a.Messages() {
		if m.OfSystem != nil {
			assert.Equal(t, "You add.", m.OfSystem.Content.OfString.Value)
		}
	}
}
