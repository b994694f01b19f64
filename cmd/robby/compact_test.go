package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// robby chat holds a 100-turn conversation with a server whose context
// window is 512 tokens: it learns the window from the server's first
// context-length error, then drops the oldest turns before each request.
func TestChatHolds100TurnsIn512Tokens(t *testing.T) {
	srv := upstream(t)
	srv.ContextLimit(512, robbytest.LlamaCpp)
	var in strings.Builder
	for i := range 100 {
		srv.Reply(robbytest.Text(fmt.Sprintf("Answer %d: %s", i, strings.Repeat("that is a fine question. ", 4))))
		fmt.Fprintf(&in, "question %d: %s\n", i, strings.Repeat("tell me more about it ", 3))
	}
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"chat", "-base-url", srv.URL}, strings.NewReader(in.String()), &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	assert.NotContains(t, stderr.String(), "robby:", "no error")
	assert.Equal(t, 100, strings.Count(stdout.String(), "Answer "))
	assert.Contains(t, stdout.String(), "Answer 99:")
	assert.Contains(t, stderr.String(), "conversation compacted (drop)")
	reqs := srv.Requests()
	assert.Len(t, reqs, 101, "one retry, when the server first refused")
	refused := 0
	for i, req := range reqs {
		if req.Tokens > 512 {
			refused++
			continue
		}
		last := req.Messages[len(req.Messages)-1]
		assert.Equal(t, "user", last.Role, "request %d", i)
	}
	assert.Equal(t, 1, refused)
	assert.Equal(t, 0, srv.Pending())
}

// -compact off sends the whole conversation, and the server's refusal is
// reported.
func TestChatCompactOff(t *testing.T) {
	srv := upstream(t)
	srv.ContextLimit(200, robbytest.OpenAI)
	var in strings.Builder
	for i := range 10 {
		srv.Reply(robbytest.Text(strings.Repeat("words ", 20)))
		fmt.Fprintf(&in, "question %d: %s\n", i, strings.Repeat("tell me ", 10))
	}
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"chat", "-base-url", srv.URL, "-compact", "off"}, strings.NewReader(in.String()), &stdout, &stderr)
	assert.Equal(t, 1, exitCode(err, &stderr), "the last answer failed")
	assert.Contains(t, stderr.String(), "does not fit the model's context window")
	assert.NotContains(t, stderr.String(), "compacted")
}

func TestCompactFlags(t *testing.T) {
	var stderr bytes.Buffer
	err := run(t.Context(), []string{"run", "-compact", "some", "hi"}, nil, &stderr, &stderr)
	require.ErrorContains(t, err, `bad -compact "some"`)
	err = run(t.Context(), []string{"run", "-context", "-5", "hi"}, nil, &stderr, &stderr)
	require.ErrorContains(t, err, "bad -context -5")
}

// robby serve fits a client's long conversation into the upstream's
// window, by default.
func TestServeCompacts(t *testing.T) {
	srv := upstream(t, robbytest.Text("served answer"))
	srv.ContextLimit(512, robbytest.VLLM)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	base, _, done := startServe(ctx, t, "-addr", "127.0.0.1:0", "-base-url", srv.URL, "-model", "agent", "-context", "512")
	var msgs []openai.ChatCompletionMessageParamUnion
	for i := range 30 {
		msgs = append(msgs, openai.UserMessage(fmt.Sprintf("question %d: %s", i, strings.Repeat("tell me more ", 6))),
			openai.AssistantMessage(fmt.Sprintf("answer %d: %s", i, strings.Repeat("here it is ", 6))))
	}
	msgs = append(msgs, openai.UserMessage("and the last one?"))
	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(""), option.WithMaxRetries(0))
	res, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "agent", Messages: msgs})
	require.NoError(t, err)
	assert.Equal(t, "served answer", res.Choices[0].Message.Content)
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	assert.LessOrEqual(t, reqs[0].Tokens, 512)
	assert.Equal(t, "and the last one?", reqs[0].Messages[len(reqs[0].Messages)-1].Content)
	cancel()
	require.NoError(t, <-done)
}
