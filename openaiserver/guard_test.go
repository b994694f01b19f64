package openaiserver_test

import (
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
)

var (
	redactKeys = robby.WithGuards(robby.Guard{Name: "keys", On: robby.GuardOutput, Pattern: regexp.MustCompile(`sk-[A-Za-z0-9]{20,}`),
		Action: robby.Redact, Replacement: "[secret]"})
	blockKeys = robby.WithGuards(robby.Guard{Name: "no-keys", On: robby.GuardOutput, Pattern: regexp.MustCompile(`sk-[A-Za-z0-9]{20,}`),
		Action: robby.Block, Message: "Keys are not given out."})
)

// rawStream posts body to path and returns the whole streamed answer as
// sent, so that a test sees every byte a client could.
func rawStream(t *testing.T, url, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestGuardedChatStreamKeepsTheSecret(t *testing.T) {
	upstream := newServer(t)
	upstream.Reply(robbytest.LateSecret(), robbytest.LateSecret())
	client, hs := serve(t, upstream, openaiserver.Options{}, redactKeys)

	s := client.Chat.Completions.NewStreaming(t.Context(), userParams("my key?"))
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	require.NoError(t, s.Err())
	assert.Contains(t, acc.Choices[0].Message.Content, "Your key is [secret] and nothing else.")
	assert.False(t, robbytest.Leaks(acc.Choices[0].Message.Content, 3))

	status, raw := rawStream(t, hs.URL, "/v1/chat/completions",
		`{"model":"robby","stream":true,"messages":[{"role":"user","content":"my key?"}]}`)
	assert.Equal(t, http.StatusOK, status)
	assert.False(t, robbytest.Leaks(raw, 5), "no piece of the secret is on the wire")
	assert.Contains(t, raw, "[secret]")
}

func TestGuardedChatBlockIsAnOpenAIError(t *testing.T) {
	upstream := newServer(t)
	upstream.Reply(robbytest.LateSecret(), robbytest.LateSecret())
	client, _ := serve(t, upstream, openaiserver.Options{}, blockKeys)

	s := client.Chat.Completions.NewStreaming(t.Context(), userParams("my key?"))
	text := ""
	for s.Next() {
		for _, c := range s.Current().Choices {
			text += c.Delta.Content
		}
	}
	var apiErr *openai.Error
	require.True(t, errors.As(s.Err(), &apiErr), "%v", s.Err())
	assert.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	assert.Equal(t, "guardrail_blocked", apiErr.Code)
	assert.Contains(t, apiErr.Message, `guard "no-keys" blocked the output`)
	assert.Contains(t, apiErr.Message, "Keys are not given out.")
	assert.Empty(t, text, "a blocked answer streams none of its text")

	_, err := client.Chat.Completions.New(t.Context(), userParams("my key?"))
	require.True(t, errors.As(err, &apiErr))
	assert.Equal(t, "guardrail_blocked", apiErr.Code)
}

func TestGuardedResponsesStream(t *testing.T) {
	upstream := newServer(t)
	upstream.Reply(robbytest.LateSecret(), robbytest.LateSecret())
	url := serveResponses(t, upstream, openaiserver.Options{}, redactKeys)

	status, raw := rawStream(t, url, "/v1/responses", `{"model":"robby","stream":true,"store":false,"input":"my key?"}`)
	assert.Equal(t, http.StatusOK, status)
	assert.False(t, robbytest.Leaks(raw, 5), "no piece of the secret is on the wire")
	assert.Contains(t, raw, "[secret]")

	client := clientFor(url, "k")
	res, err := client.Responses.New(t.Context(), ask("my key?", ""))
	require.NoError(t, err)
	assert.Contains(t, res.OutputText(), "Your key is [secret]")
}

func TestGuardedResponsesBlock(t *testing.T) {
	upstream := newServer(t)
	upstream.Reply(robbytest.LateSecret())
	url := serveResponses(t, upstream, openaiserver.Options{}, blockKeys)

	status, raw := rawStream(t, url, "/v1/responses", `{"model":"robby","stream":true,"store":false,"input":"my key?"}`)
	assert.False(t, robbytest.Leaks(raw, 5))
	assert.NotContains(t, raw, "All is well", "a blocked answer streams none of its text")
	assert.Contains(t, raw, "guardrail_blocked")
	_ = status
}
