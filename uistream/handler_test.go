package uistream_test

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
	"github.com/robby-go/robby/internal/httpapi/httpapitest"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/uistream"
)

func TestStreamMapsEveryEvent(t *testing.T) {
	srv := newServer(t,
		robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)).WithReasoning("I should add.").WithUsage(10, 5),
		robbytest.Text("1 + 2 = 3").WithUsage(20, 4),
	)
	h := httptest.NewServer(uistream.New(newAgent(t, srv, robby.WithTools(addTool)), uistream.Options{}))
	defer h.Close()

	resp := do(t, h.URL+"/api/chat", "POST", "", chatBody("c1", "What is 1 + 2?"))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "v1", resp.Header.Get("x-vercel-ai-ui-message-stream"))
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	parts, done := readParts(t, resp.Body)
	require.True(t, done, "no [DONE]")

	var seq []string
	for _, ty := range types(parts) {
		if ty != "tool-input-delta" && ty != "text-delta" && ty != "reasoning-delta" {
			seq = append(seq, ty)
		}
	}
	assert.Equal(t, []string{"start", "start-step", "reasoning-start", "reasoning-end", "tool-input-start",
		"tool-input-available", "tool-output-available", "finish-step", "start-step", "text-start", "text-end",
		"finish-step", "finish"}, seq)
	var text, reasoning, args string
	for _, p := range parts {
		switch p.typ() {
		case "text-delta":
			text += p["delta"].(string)
		case "reasoning-delta":
			reasoning += p["delta"].(string)
		case "tool-input-delta":
			args += p["inputTextDelta"].(string)
			assert.NotEmpty(t, p["toolCallId"])
		case "tool-input-available":
			assert.Equal(t, map[string]any{"a": 1.0, "b": 2.0}, p["input"])
			assert.Equal(t, "add", p["toolName"])
			assert.Equal(t, true, p["dynamic"])
		case "tool-output-available":
			assert.Equal(t, "3", p["output"])
		case "finish":
			assert.Equal(t, "stop", p["finishReason"])
			usage := p["messageMetadata"].(map[string]any)["usage"].(map[string]any)
			assert.Equal(t, 30.0, usage["promptTokens"])
			assert.Equal(t, 9.0, usage["completionTokens"])
		}
	}
	assert.Equal(t, "1 + 2 = 3", text)
	assert.Equal(t, "I should add.", reasoning)
	if args != "" {
		assert.JSONEq(t, `{"a":1,"b":2}`, args, "the argument deltas add up to the call's arguments")
	}
}

func TestClientHistoryReachesTheModel(t *testing.T) {
	srv := newServer(t, robbytest.Text("Paris."))
	h := httptest.NewServer(uistream.New(newAgent(t, srv, robby.WithTools(addTool)), uistream.Options{}))
	defer h.Close()
	body := `{"id":"c","trigger":"submit-message","messages":[
	 {"id":"1","role":"user","parts":[{"type":"text","text":"Add 1 and 2."}]},
	 {"id":"2","role":"assistant","parts":[{"type":"step-start"},
	   {"type":"dynamic-tool","toolName":"add","toolCallId":"call_1","state":"output-available","input":{"a":1,"b":2},"output":"3"},
	   {"type":"step-start"},{"type":"text","text":"It is 3."}]},
	 {"id":"3","role":"user","parts":[{"type":"text","text":"And the capital of France?"}]}]}`
	resp := do(t, h.URL+"/api/chat", "POST", "", body)
	_, done := readParts(t, resp.Body)
	require.True(t, done)
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	var roles []string
	for _, m := range reqs[0].Messages {
		roles = append(roles, m.Role)
	}
	assert.Equal(t, []string{"user", "assistant", "tool", "assistant", "user"}, roles)
	assert.Equal(t, "add", reqs[0].Messages[1].ToolCalls[0].Name)
	assert.Equal(t, "3", reqs[0].Messages[2].Content)
	assert.Equal(t, "And the capital of France?", reqs[0].Messages[4].Content)
}

func TestErrorsAreSaidPlainly(t *testing.T) {
	t.Run("bad token", func(t *testing.T) {
		srv := newServer(t)
		h := httptest.NewServer(uistream.New(newAgent(t, srv), uistream.Options{Tokens: map[string]string{"good": "alice"}}))
		defer h.Close()
		resp := do(t, h.URL+"/api/chat", "POST", "bad", chatBody("c", "hi"))
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		assert.Empty(t, srv.Requests())
	})
	t.Run("model down", func(t *testing.T) {
		srv := newServer(t, robbytest.Error(http.StatusServiceUnavailable, `{"error":{"message":"the model is loading"}}`))
		h := httptest.NewServer(uistream.New(newAgent(t, srv), uistream.Options{}))
		defer h.Close()
		parts, done := readParts(t, do(t, h.URL+"/api/chat", "POST", "", chatBody("c", "hi")).Body)
		require.True(t, done)
		require.Equal(t, []string{"start", "error", "finish"}, types(parts))
		assert.Contains(t, parts[1]["errorText"], "the model is loading")
		assert.Equal(t, "error", parts[2]["finishReason"])
	})
	t.Run("budget reached", func(t *testing.T) {
		srv := newServer(t, robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)).WithUsage(10, 5))
		agent := newAgent(t, srv, robby.WithTools(addTool), robby.WithBudget(robby.Budget{ModelCalls: 1}))
		h := httptest.NewServer(uistream.New(agent, uistream.Options{}))
		defer h.Close()
		parts, done := readParts(t, do(t, h.URL+"/api/chat", "POST", "", chatBody("c", "hi")).Body)
		require.True(t, done)
		last := parts[len(parts)-1]
		require.Equal(t, "finish", last.typ())
		assert.Equal(t, "length", last["finishReason"])
		assert.Equal(t, "budget", last["messageMetadata"].(map[string]any)["stopped"])
	})
	t.Run("bad request", func(t *testing.T) {
		srv := newServer(t)
		h := httptest.NewServer(uistream.New(newAgent(t, srv), uistream.Options{}))
		defer h.Close()
		resp := do(t, h.URL+"/api/chat", "POST", "", `{"id":"c","messages":[]}`)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		var e struct{ Error struct{ Message string } }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		assert.Contains(t, e.Error.Message, "no messages")
	})
}

func TestClientGoneCancelsTheRun(t *testing.T) {
	srv := newServer(t, robbytest.Text("one two three four five six seven eight nine ten").WithDelay(100*time.Millisecond))
	store := newStore(t)
	h := httptest.NewServer(uistream.New(newAgent(t, srv), uistream.Options{Store: store}))
	defer h.Close()

	ctx, cancel := context.WithCancel(t.Context())
	resp := httpapitest.DoContext(ctx, t, h.URL+"/api/chat", "POST", "", chatBody("gone", "Count to ten."))
	httpapitest.ReadUntil(t, resp.Body, "text-delta")
	cancel()
	resp.Body.Close()

	// The run ends: the store holds the prompt and the record of the
	// cancelled run, never the answer in part.
	require.Eventually(t, func() bool {
		_, msgs, err := store.Load(t.Context(), "", "gone")
		return err == nil && len(msgs) == 2 && msgs[1].Chat == nil
	}, 5*time.Second, 20*time.Millisecond)
	_, msgs, err := store.Load(t.Context(), "", "gone")
	require.NoError(t, err)
	assert.Contains(t, string(msgs[0].Chat), "Count to ten.")
	assert.Contains(t, msgs[1].Error, "context canceled")
}

func TestCompactionIsAPart(t *testing.T) {
	srv := newServer(t, robbytest.Text("Short answer."))
	agent := newAgent(t, srv, robby.WithContextWindow(800), robby.WithCompaction(robby.DropOldestTurns()),
		robby.WithParams(openai.ChatCompletionNewParams{MaxCompletionTokens: openai.Int(100)}))
	h := httptest.NewServer(uistream.New(agent, uistream.Options{}))
	defer h.Close()
	var texts []string
	for i := range 20 {
		texts = append(texts, fmt.Sprintf("turn %d: %s", i, strings.Repeat("words to fill the context ", 12)))
	}
	parts, done := readParts(t, do(t, h.URL+"/api/chat", "POST", "", chatBody("c", append(texts, "And now?")...)).Body)
	require.True(t, done)
	var compaction map[string]any
	for _, p := range parts {
		if p.typ() == "data-compaction" {
			compaction = p["data"].(map[string]any)
			assert.Equal(t, true, p["transient"])
		}
	}
	require.NotNil(t, compaction, "no data-compaction part in %v", types(parts))
	assert.Equal(t, "drop", compaction["policy"])
	assert.Less(t, compaction["tokensAfter"], compaction["tokensBefore"])
}

// slowRecords is a store whose writes of a stopped run's record take a
// while, as under load.
type slowRecords struct{ robby.Store }

func (s slowRecords) Append(ctx context.Context, user, id string, after int64, msgs ...robby.Message) error {
	for _, m := range msgs {
		if m.Error != "" {
			time.Sleep(300 * time.Millisecond)
		}
	}
	return s.Store.Append(ctx, user, id, after, msgs...)
}

// TestNextQuestionWaitsForTheStoppedRun: a question sent right after the
// client stopped an answer waits for the stopped run to store its record,
// then runs on the chat with it; it does not fail on a conflict.
func TestNextQuestionWaitsForTheStoppedRun(t *testing.T) {
	srv := newServer(t, robbytest.Text("one two three four five six seven eight nine ten").WithDelay(100*time.Millisecond),
		robbytest.Text("Eleven."))
	store := newStore(t)
	h := httptest.NewServer(uistream.New(newAgent(t, srv), uistream.Options{Store: slowRecords{store}}))
	defer h.Close()

	ctx, cancel := context.WithCancel(t.Context())
	resp := httpapitest.DoContext(ctx, t, h.URL+"/api/chat", "POST", "", chatBody("c", "Count to ten."))
	httpapitest.ReadUntil(t, resp.Body, "text-delta")
	cancel()
	resp.Body.Close()
	parts, done := readParts(t, httpapitest.Do(t, h.URL+"/api/chat", "POST", "", chatBody("c", "And then?")).Body)
	require.True(t, done, "the next question's stream ends: %v", parts)
	for _, p := range parts {
		assert.NotEqual(t, "error", p.typ(), "the next question fails: %v", parts)
	}
	_, msgs, err := store.Load(t.Context(), "", "c")
	require.NoError(t, err)
	require.Len(t, msgs, 4, "the prompt, the stopped run's record, the next prompt, its answer")
	assert.Contains(t, msgs[1].Error, "context canceled")
	assert.Contains(t, string(msgs[3].Chat), "Eleven.")
}
