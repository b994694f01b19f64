package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/robby-go/robby/robbytest"
)

func TestMain(m *testing.M) {
	// A test that needs robby as a program, for a host that starts its
	// MCP servers itself, runs this test binary with ROBBY_TEST_MAIN=1.
	if os.Getenv("ROBBY_TEST_MAIN") == "1" {
		main()
		return
	}
	goleak.VerifyTestMain(m)
}

func upstream(t *testing.T, replies ...robbytest.Reply) *robbytest.Server {
	srv := robbytest.NewServer()
	t.Cleanup(srv.Close)
	srv.Reply(replies...)
	return srv
}

func TestRunStreamsTheAnswer(t *testing.T) {
	srv := upstream(t, robbytest.Text("Hello from robby"))
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"run", "-base-url", srv.URL, "-model", "m", "-system", "Be brief.", "say", "hi"}, nil, &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	assert.Equal(t, "Hello from robby\n", stdout.String())
	req := srv.Requests()[0]
	assert.Equal(t, "m", req.Model)
	assert.Equal(t, "say hi", req.Messages[1].Content)
}

func TestChatKeepsMemory(t *testing.T) {
	srv := upstream(t, robbytest.Text("Hi Bob."), robbytest.Text("You are Bob."))
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"chat", "-base-url", srv.URL}, strings.NewReader("I am Bob\n\nwho am I?\n"), &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	assert.Equal(t, "Hi Bob.\nYou are Bob.\n", stdout.String())
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Len(t, reqs[1].Messages, 3, "the second question carries the first exchange")
	assert.Equal(t, "ai/qwen2.5", reqs[0].Model, "the default model")
}

// TestChatSession runs robby chat twice on one session, each time as a
// process: the second continues the first's conversation, read from the
// store file.
func TestChatSession(t *testing.T) {
	srv := upstream(t, robbytest.Text("Hi Bob."), robbytest.Text("You are Bob."), robbytest.Text("Hello."))
	path := filepath.Join(t.TempDir(), "sessions.db")
	chat := func(session, input string) string { // a process of its own
		cmd := exec.Command(os.Args[0], "chat", "-base-url", srv.URL, "-session", session, "-store", path)
		cmd.Env = append(os.Environ(), "ROBBY_TEST_MAIN=1")
		cmd.Stdin = strings.NewReader(input)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), stderr.String())
		return stdout.String()
	}
	assert.Equal(t, "Hi Bob.\n", chat("bob", "I am Bob\n"))
	assert.Equal(t, "You are Bob.\n", chat("bob", "who am I?\n"))
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Len(t, reqs[1].Messages, 3, "the second run carries the first exchange")
	assert.Equal(t, "I am Bob", reqs[1].Messages[0].Content)

	assert.Equal(t, "Hello.\n", chat("other", "hi\n"))
	assert.Len(t, srv.Requests()[2].Messages, 1, "another session starts empty")
}

func TestDefaultStorePath(t *testing.T) {
	t.Setenv("ROBBY_STORE", "")
	t.Setenv("XDG_DATA_HOME", "/data")
	assert.Equal(t, "/data/robby/conversations.db", defaultStorePath())
}

func TestServeAnswersAndShutsDown(t *testing.T) {
	srv := upstream(t, robbytest.Text("served answer"))
	ctx, cancel := context.WithCancel(t.Context())
	base, stderr, done := startServe(ctx, t, "-addr", "127.0.0.1:0", "-base-url", srv.URL, "-model", "agent", "-token", "tok")
	assert.Equal(t, "served answer", streamFrom(t, base, "tok", "hi"))

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not stop")
	}
	assert.Contains(t, stderr.String(), "shutting down")
}

// startServe runs robby serve with args until ctx is done, and returns
// the endpoint's base URL, its stderr and its outcome.
func startServe(ctx context.Context, t *testing.T, args ...string) (string, *syncBuffer, <-chan error) {
	t.Helper()
	stderr := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, append([]string{"serve"}, args...), nil, io.Discard, stderr) }()
	var base string
	require.Eventually(t, func() bool {
		m := regexp.MustCompile(`on (http://\S+/v1)`).FindStringSubmatch(stderr.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	}, 5*time.Second, 10*time.Millisecond)
	return base, stderr, done
}

// streamFrom asks the model "agent" of a served endpoint for prompt,
// streamed, with the openai-go client, and returns the answer's text.
func streamFrom(t *testing.T, base, key, prompt string) string {
	t.Helper()
	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(key), option.WithMaxRetries(0))
	s := client.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{Model: "agent",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}})
	defer s.Close()
	var text strings.Builder
	for s.Next() {
		for _, ch := range s.Current().Choices {
			text.WriteString(ch.Delta.Content)
		}
	}
	require.NoError(t, s.Err())
	return text.String()
}

func TestCommandErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"mcpServers": {"x": {}}}`), 0o600))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "flag: help requested"},
		{"unknown command", []string{"fly"}, `unknown command "fly"`},
		{"no prompt", []string{"run"}, "run needs a prompt"},
		{"bad config", []string{"run", "-mcp", bad, "hi"}, `"x"`},
		{"missing config", []string{"run", "-mcp", "/nonexistent/mcp.json", "hi"}, "no such file"},
		{"bad URL", []string{"run", "-base-url", "::", "hi"}, "bad -base-url"},
		{"nothing answers", []string{"run", "-base-url", "http://127.0.0.1:1/v1", "hi"}, "nothing answers at http://127.0.0.1:1/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("OPENAI_BASE_URL", "")
			err := run(t.Context(), tt.args, nil, io.Discard, io.Discard)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// syncBuffer is a buffer written by the server's goroutine and read by the
// test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
