package uistream_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/uistream"
)

type chatList struct {
	Data []struct {
		ID, Title string
		Messages  int64
	}
}

type chat struct {
	ID, Title  string
	UIMessages []struct {
		Role     string
		Parts    []map[string]any
		Metadata map[string]any
	}
}

func decode[T any](t *testing.T, resp *http.Response) T {
	t.Helper()
	var v T
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	return v
}

func TestStoredChatsArePerUser(t *testing.T) {
	srv := newServer(t,
		robbytest.ToolCalls(robbytest.Call("add", `{"a":2,"b":2}`)).WithUsage(5, 1),
		robbytest.Text("It is 4.").WithUsage(7, 3),
		robbytest.Text("You asked about 2 + 2."),
	)
	h := httptest.NewServer(uistream.New(newAgent(t, srv, robby.WithTools(addTool)), uistream.Options{
		Store: newStore(t), Tokens: map[string]string{"alice-token": "alice", "bob-token": "bob"}}))
	defer h.Close()

	_, done := readParts(t, do(t, h.URL+"/api/chat", "POST", "alice-token", chatBody("c1", "What is 2 + 2?")).Body)
	require.True(t, done)
	// The next message sends only what is new: the history is the store's.
	_, done = readParts(t, do(t, h.URL+"/api/chat", "POST", "alice-token", chatBody("c1", "What did I ask?")).Body)
	require.True(t, done)
	last := srv.Requests()[2].Messages
	require.Len(t, last, 5, "user, call, result, answer, user")
	assert.Equal(t, "What is 2 + 2?", last[0].Content)

	list := decode[chatList](t, do(t, h.URL+"/api/chats", "GET", "alice-token", ""))
	require.Len(t, list.Data, 1)
	assert.Equal(t, "c1", list.Data[0].ID)
	assert.Equal(t, "What is 2 + 2?", list.Data[0].Title)

	c := decode[chat](t, do(t, h.URL+"/api/chats/c1", "GET", "alice-token", ""))
	require.Len(t, c.UIMessages, 4)
	assert.Equal(t, "user", c.UIMessages[0].Role)
	answer := c.UIMessages[1]
	assert.Equal(t, "assistant", answer.Role)
	var tool map[string]any
	for _, p := range answer.Parts {
		if p["type"] == "dynamic-tool" {
			tool = p
		}
	}
	require.NotNil(t, tool, "the tool call is in the answer: %v", answer.Parts)
	assert.Equal(t, "add", tool["toolName"])
	assert.Equal(t, "output-available", tool["state"])
	assert.Equal(t, "4", tool["output"])
	assert.Equal(t, map[string]any{"a": 2.0, "b": 2.0}, tool["input"])
	assert.Equal(t, 12.0, answer.Metadata["usage"].(map[string]any)["promptTokens"], "both turns of the answer")

	// Bob sees none of it, and changes none of it.
	assert.Empty(t, decode[chatList](t, do(t, h.URL+"/api/chats", "GET", "bob-token", "")).Data)
	assert.Equal(t, http.StatusNotFound, do(t, h.URL+"/api/chats/c1", "GET", "bob-token", "").StatusCode)
	assert.Equal(t, http.StatusNotFound, do(t, h.URL+"/api/chats/c1", "PATCH", "bob-token", `{"title":"mine"}`).StatusCode)
	assert.Equal(t, http.StatusNotFound, do(t, h.URL+"/api/chats/c1", "DELETE", "bob-token", "").StatusCode)
	assert.Equal(t, http.StatusUnauthorized, do(t, h.URL+"/api/chats", "GET", "", "").StatusCode)
	// Bob's chat of the same id is his own.
	srv.Reply(robbytest.Text("Hello Bob."))
	_, done = readParts(t, do(t, h.URL+"/api/chat", "POST", "bob-token", chatBody("c1", "Hi")).Body)
	require.True(t, done)
	assert.Len(t, srv.Requests()[3].Messages, 1, "Bob's run did not read Alice's chat")

	renamed := decode[chat](t, do(t, h.URL+"/api/chats/c1", "PATCH", "alice-token", `{"title":"Sums"}`))
	assert.Equal(t, "Sums", renamed.Title)
	assert.Equal(t, http.StatusOK, do(t, h.URL+"/api/chats/c1", "DELETE", "alice-token", "").StatusCode)
	assert.Equal(t, http.StatusNotFound, do(t, h.URL+"/api/chats/c1", "GET", "alice-token", "").StatusCode)
	assert.Len(t, decode[chatList](t, do(t, h.URL+"/api/chats", "GET", "bob-token", "")).Data, 1)
}

func TestStoredChatRefusals(t *testing.T) {
	srv := newServer(t)
	h := httptest.NewServer(uistream.New(newAgent(t, srv), uistream.Options{Store: newStore(t)}))
	defer h.Close()
	assert.Equal(t, http.StatusBadRequest, do(t, h.URL+"/api/chat", "POST", "", chatBody("../x", "hi")).StatusCode)
	body := `{"id":"c","trigger":"regenerate-message","messages":[{"id":"1","role":"user","parts":[{"type":"text","text":"hi"}]}]}`
	assert.Equal(t, http.StatusBadRequest, do(t, h.URL+"/api/chat", "POST", "", body).StatusCode)
	assert.Equal(t, http.StatusBadRequest, do(t, h.URL+"/api/chats/x", "PATCH", "", `{}`).StatusCode)
	assert.Empty(t, srv.Requests())

	noStore := httptest.NewServer(uistream.New(newAgent(t, srv), uistream.Options{}))
	defer noStore.Close()
	assert.Equal(t, http.StatusNotFound, do(t, noStore.URL+"/api/chats", "GET", "", "").StatusCode)
}
