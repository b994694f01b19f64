package agui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/agui"
	"github.com/robby-go/robby/internal/httpapi/httpapitest"
	"github.com/robby-go/robby/robbytest"
)

func input(thread string, messages string) string {
	return `{"threadId":"` + thread + `","runId":"r1","state":{},"tools":[],"context":[],"forwardedProps":{},"messages":` + messages + `}`
}

const ask = `[{"id":"u1","role":"user","content":"What is 1 + 2?"}]`

func TestRunMapsEveryEvent(t *testing.T) {
	srv := newServer(t,
		robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)).WithReasoning("Add them.").WithUsage(10, 5),
		robbytest.Text("1 + 2 = 3").WithUsage(20, 4),
	)
	h := httptest.NewServer(agui.New(newAgent(t, srv, robby.WithTools(addTool)), agui.Options{}))
	defer h.Close()
	resp := do(t, h.URL, "POST", "", input("t1", ask))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	events := readEvents(t, resp.Body)

	var seq []string
	var text, args string
	for _, e := range events {
		switch e["type"] {
		case "TEXT_MESSAGE_CONTENT":
			text += e["delta"].(string)
		case "TOOL_CALL_ARGS":
			args += e["delta"].(string)
		case "REASONING_MESSAGE_CONTENT", "CUSTOM":
		case "TOOL_CALL_RESULT":
			assert.Equal(t, "3", e["content"])
			assert.Equal(t, "tool", e["role"])
			seq = append(seq, e["type"].(string))
		case "RUN_FINISHED":
			assert.Equal(t, "t1", e["threadId"])
			assert.Equal(t, "r1", e["runId"])
			assert.Equal(t, map[string]any{"type": "success"}, e["outcome"])
			usage := e["usage"].([]any)[0].(map[string]any)
			assert.Equal(t, 30.0, usage["inputTokens"])
			assert.Equal(t, 9.0, usage["outputTokens"])
			seq = append(seq, e["type"].(string))
		default:
			seq = append(seq, e["type"].(string))
		}
	}
	assert.Equal(t, []string{"RUN_STARTED", "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_END",
		"REASONING_END", "TOOL_CALL_START", "TOOL_CALL_END", "TOOL_CALL_RESULT", "TEXT_MESSAGE_START",
		"TEXT_MESSAGE_END", "RUN_FINISHED"}, seq)
	assert.Equal(t, "1 + 2 = 3", text)
	assert.JSONEq(t, `{"a":1,"b":2}`, args)
}

func TestFrontEndToolsEndTheRun(t *testing.T) {
	srv := newServer(t,
		robbytest.ToolCalls(robbytest.Call("confirm", `{"question":"Go on?"}`)),
		robbytest.Text("Going on."),
	)
	h := httptest.NewServer(agui.New(newAgent(t, srv), agui.Options{}))
	defer h.Close()
	tools := `"tools":[{"name":"confirm","description":"Asks the user","parameters":{"type":"object","properties":{"question":{"type":"string"}}}}]`
	body := `{"threadId":"t","runId":"r1",` + tools + `,"messages":[{"id":"u1","role":"user","content":"Shall we?"}]}`
	events := readEvents(t, do(t, h.URL, "POST", "", body).Body)
	last := events[len(events)-1]
	require.Equal(t, "RUN_FINISHED", last["type"])
	pending := last["outcome"].(map[string]any)["pendingToolCallIds"].([]any)
	require.Len(t, pending, 1)
	assert.Contains(t, eventTypes(events), "TOOL_CALL_END")

	// The next run gives the call's result as a tool message.
	id := pending[0].(string)
	body = `{"threadId":"t","runId":"r2",` + tools + `,"messages":[{"id":"u1","role":"user","content":"Shall we?"},
	 {"id":"a1","role":"assistant","toolCalls":[{"id":"` + id + `","type":"function","function":{"name":"confirm","arguments":"{\"question\":\"Go on?\"}"}}]},
	 {"id":"t1","role":"tool","toolCallId":"` + id + `","content":"yes"}]}`
	events = readEvents(t, do(t, h.URL, "POST", "", body).Body)
	assert.Equal(t, "RUN_FINISHED", events[len(events)-1]["type"])
	msgs := srv.Requests()[1].Messages
	assert.Equal(t, "tool", msgs[len(msgs)-1].Role)
	assert.Equal(t, "yes", msgs[len(msgs)-1].Content)
}

func TestStoredThreadsArePerUser(t *testing.T) {
	srv := newServer(t, robbytest.Text("Hi Alice."), robbytest.Text("Hi again."), robbytest.Text("Hi Bob."))
	store := newStore(t)
	h := httptest.NewServer(agui.New(newAgent(t, srv), agui.Options{Store: store,
		Tokens: map[string]string{"a": "alice", "b": "bob"}}))
	defer h.Close()
	readEvents(t, do(t, h.URL, "POST", "a", input("th", `[{"id":"1","role":"user","content":"Hello"}]`)).Body)
	// The client sends the whole thread; the store's history is read.
	readEvents(t, do(t, h.URL, "POST", "a", input("th", `[{"id":"1","role":"user","content":"forged"},{"id":"2","role":"user","content":"Again"}]`)).Body)
	msgs := srv.Requests()[1].Messages
	require.Len(t, msgs, 3)
	assert.Equal(t, "Hello", msgs[0].Content)
	readEvents(t, do(t, h.URL, "POST", "b", input("th", `[{"id":"1","role":"user","content":"Hey"}]`)).Body)
	assert.Len(t, srv.Requests()[2].Messages, 1, "Bob's thread is his own")
	_, alice, err := store.Load(t.Context(), "alice", "th")
	require.NoError(t, err)
	assert.Len(t, alice, 4)
	assert.Equal(t, http.StatusUnauthorized, do(t, h.URL, "POST", "", input("th", ask)).StatusCode)
	assert.Equal(t, http.StatusBadRequest, do(t, h.URL, "POST", "a", input("a/b", ask)).StatusCode)
}

func TestRunError(t *testing.T) {
	srv := newServer(t, robbytest.Error(http.StatusServiceUnavailable, `{"error":{"message":"the model is loading"}}`))
	h := httptest.NewServer(agui.New(newAgent(t, srv), agui.Options{}))
	defer h.Close()
	events := readEvents(t, do(t, h.URL, "POST", "", input("t", ask)).Body)
	require.Equal(t, []string{"RUN_STARTED", "RUN_ERROR"}, eventTypes(events))
	assert.Contains(t, events[1]["message"], "the model is loading")
}

func TestClientGoneCancelsTheRun(t *testing.T) {
	srv := newServer(t, robbytest.Text("one two three four five six seven eight nine ten").WithDelay(100*time.Millisecond))
	store := newStore(t)
	h := httptest.NewServer(agui.New(newAgent(t, srv), agui.Options{Store: store}))
	defer h.Close()
	ctx, cancel := context.WithCancel(t.Context())
	resp := httpapitest.DoContext(ctx, t, h.URL, "POST", "", input("gone", ask))
	httpapitest.ReadUntil(t, resp.Body, "TEXT_MESSAGE_CONTENT")
	cancel()
	resp.Body.Close()
	require.Eventually(t, func() bool {
		_, msgs, err := store.Load(t.Context(), "", "gone")
		return err == nil && len(msgs) == 2 && msgs[1].Chat == nil
	}, 5*time.Second, 20*time.Millisecond, "the prompt, then the record of the cancelled run; no answer in part")
}

func TestCompactionIsACustomEvent(t *testing.T) {
	srv := newServer(t, robbytest.Text("Short answer."))
	agent := newAgent(t, srv, robby.WithContextWindow(800), robby.WithCompaction(robby.DropOldestTurns()),
		robby.WithParams(openai.ChatCompletionNewParams{MaxCompletionTokens: openai.Int(100)}))
	h := httptest.NewServer(agui.New(agent, agui.Options{}))
	defer h.Close()
	var msgs []map[string]string
	for i := range 20 {
		role := map[bool]string{true: "user", false: "assistant"}[i%2 == 0]
		msgs = append(msgs, map[string]string{"id": fmt.Sprint(i), "role": role,
			"content": fmt.Sprintf("turn %d: %s", i, strings.Repeat("words to fill the context ", 12))})
	}
	msgs = append(msgs, map[string]string{"id": "last", "role": "user", "content": "And now?"})
	b, err := json.Marshal(msgs)
	require.NoError(t, err)
	events := readEvents(t, do(t, h.URL, "POST", "", input("t", string(b))).Body)
	var found bool
	for _, e := range events {
		if e["type"] == "CUSTOM" && e["name"] == "robby.compaction" {
			found = true
			assert.Equal(t, "drop", e["value"].(map[string]any)["policy"])
		}
	}
	assert.True(t, found, "no robby.compaction event in %v", eventTypes(events))
}

// TestClientCannotAnswerTheAgentsCalls: with a store, a tool message
// answering a call of one of the agent's own tools, left pending in the
// thread (by a crash), is refused; one answering a front-end tool's call
// is taken.
func TestClientCannotAnswerTheAgentsCalls(t *testing.T) {
	srv := newServer(t, robbytest.Text("Going on."))
	store := newStore(t)
	h := httptest.NewServer(agui.New(newAgent(t, srv, robby.WithTools(addTool)), agui.Options{Store: store,
		Tokens: map[string]string{"a": "alice"}}))
	defer h.Close()
	pending := func(thread, call, tool string) {
		_, err := store.Create(t.Context(), robby.Conversation{User: "alice", ID: thread})
		require.NoError(t, err)
		require.NoError(t, store.Append(t.Context(), "alice", thread, 0,
			robby.Message{Chat: json.RawMessage(`{"role":"user","content":"Go"}`)},
			robby.Message{Chat: json.RawMessage(`{"role":"assistant","tool_calls":[{"id":"` + call +
				`","type":"function","function":{"name":"` + tool + `","arguments":"{\"a\":1,\"b\":2}"}}]}`)}))
	}
	answer := func(thread, call string) string {
		return input(thread, `[{"id":"t1","role":"tool","toolCallId":"`+call+`","content":"forged"}]`)
	}
	tools := `"tools":[{"name":"confirm","description":"Asks the user","parameters":{"type":"object"}}]`

	pending("agent", "call_add", "add")
	res := do(t, h.URL, "POST", "a", answer("agent", "call_add"))
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	assert.Empty(t, srv.Requests(), "the model is not asked")
	_, msgs, err := store.Load(t.Context(), "alice", "agent")
	require.NoError(t, err)
	assert.Len(t, msgs, 2, "nothing stored")

	pending("client", "call_confirm", "confirm")
	body := strings.Replace(answer("client", "call_confirm"), `"tools":[]`, tools, 1)
	events := readEvents(t, do(t, h.URL, "POST", "a", body).Body)
	assert.Equal(t, "RUN_FINISHED", events[len(events)-1]["type"])
	require.Len(t, srv.Requests(), 1)
}
