package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/chattext"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/sqlitestore"
)

// drainAnswer is the answer the scripted model streams, a word per event, to
// the prompt "KIND I" of node_drain.mjs (tool: after the tool's result).
func drainAnswer(kind string, i int) string {
	n := 10
	if strings.HasSuffix(kind, "long") {
		// 120 s: longer than the drain, and than the 200 streams take to
		// start on a loaded machine under -race.
		n = 4000
	}
	words := make([]string, n)
	for w := range words {
		words[w] = fmt.Sprintf("w%d", w)
	}
	return fmt.Sprintf("%s %d: %s.", kind, i, strings.Join(words, " "))
}

// drainModel answers node_drain.mjs's prompts: "tool I" calls the lookup
// tool first. Each word comes 30 ms after the one before.
func drainModel(t *testing.T) *robbytest.Server {
	srv := robbytest.NewServer()
	t.Cleanup(srv.Close)
	srv.Fallback(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		var prompt string
		for _, m := range req.Messages {
			if m.Role == "user" {
				prompt = m.Content
			}
		}
		kind, n, _ := strings.Cut(prompt, " ")
		var i int
		fmt.Sscan(n, &i)
		last := req.Messages[len(req.Messages)-1]
		if kind == "tool" && last.Role == "user" {
			return robbytest.ToolCalls(robbytest.Call("lookup", fmt.Sprintf(`{"key":"%d"}`, i)))
		}
		return robbytest.Text(drainAnswer(kind, i)).WithDelay(30 * time.Millisecond)
	}))
	return srv
}

// lookupMCP serves the lookup tool over streamable HTTP, and returns the
// mcpServers file that names it.
func lookupMCP(t *testing.T) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "lookup", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Look a key up"},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Key string `json:"key"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "value " + in.Key}}}, nil, nil
		})
	return mcpOverHTTP(t, "lookup", s)
}

// mcpOverHTTP serves s over streamable HTTP until the test ends, and returns
// an -mcp file that names it.
func mcpOverHTTP(t *testing.T, name string, s *mcp.Server) string {
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() { // a process killed, or not stopped yet, never ends its session
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	t.Cleanup(hs.Close)
	config := filepath.Join(t.TempDir(), "mcp.json")
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{name: map[string]any{"url": hs.URL}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(config, b, 0o600))
	return config
}

type drainedStream struct {
	I         int    `json:"i"`
	Kind      string `json:"kind"`
	Text      string `json:"text"`
	ID        string `json:"id"`
	Completed bool   `json:"completed"`
	Error     string `json:"error"`
	Code      string `json:"code"`
}

// TestServeDrainsOnSIGTERM: robby serve, a process of its own, gets SIGTERM in
// the middle of 200 streams of the OpenAI Node SDK (Responses and chat
// completions, some calling a tool). It closes its listener at once. The
// streams that end within -drain end complete. Those that cannot are
// cancelled at its end, and their clients read why. The process then exits
// 0. Every response is stored as it ended: the completed ones whole, the
// cancelled ones "cancelled" with no half-written message.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	bench := requireNodeSDK(t)
	const streams, drain, token = 200, 20 * time.Second, "drain-token"
	store := filepath.Join(t.TempDir(), "drain.db")
	model := drainModel(t)
	args := []string{"-base-url", model.URL, "-model", "m", "-store", store, "-mcp", lookupMCP(t), "-token", token}
	serve, base, serveLog := serveProcess(t, append(args, "-drain", drain.String())...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("robby serve's log:\n%s", serveLog)
		}
	})

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	node := exec.CommandContext(ctx, bench.node, filepath.Join("testdata", "node_drain.mjs"), base, "m", fmt.Sprint(streams))
	node.Env = append(os.Environ(), "OPENAI_NODE_SDK="+bench.sdk, "OPENAI_API_KEY="+token, "OPENAI_BASE_URL=", "NODE_OPTIONS=")
	stdin, err := node.StdinPipe()
	require.NoError(t, err)
	stderr, err := node.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, node.Start())
	var lines []string
	var signalled time.Time
	sc := bufio.NewScanner(stderr)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if sc.Text() != "@@started {}" {
			continue
		}
		require.NoError(t, serve.Process.Signal(syscall.SIGTERM))
		signalled = time.Now()
		require.Eventually(t, func() bool { return strings.Contains(serveLog.String(), "robby: shutting down") },
			10*time.Second, 5*time.Millisecond)
		u, err := url.Parse(base)
		require.NoError(t, err)
		_, err = net.DialTimeout("tcp", u.Host, time.Second)
		assert.Error(t, err, "the listener is still open")
		fmt.Fprintln(stdin, "signalled")
	}
	require.NoError(t, node.Wait(), "node: %s", strings.Join(lines, "\n"))
	require.False(t, signalled.IsZero(), "the streams never all started: %s", strings.Join(lines, "\n"))
	require.NoError(t, serve.Wait(), "robby serve exited with an error: %s", serveLog)
	took := time.Since(signalled)
	assert.Less(t, took, drain+cutGrace+5*time.Second, "robby serve took %v to stop", took)
	assert.Contains(t, serveLog.String(), "drain over: cancelling")

	steps := nodeSteps(t, strings.Join(lines, "\n"))
	refused := nodeStep[map[string]string](t, steps, "refused")
	assert.Equal(t, "APIConnectionError", refused["name"], "a request after SIGTERM: %v", refused)
	ended := nodeStep[[]drainedStream](t, steps, "streams")
	require.Len(t, ended, streams)
	for _, s := range ended {
		want := drainAnswer(s.Kind, s.I)
		if strings.HasSuffix(s.Kind, "long") {
			assert.False(t, s.Completed, "stream %d (%s) completed", s.I, s.Kind)
			assert.Equal(t, "server_shutdown", s.Code, "stream %d (%s) ended with %q", s.I, s.Kind, s.Error)
			assert.True(t, strings.HasPrefix(want, s.Text), "stream %d (%s): %q", s.I, s.Kind, s.Text)
		} else {
			assert.True(t, s.Completed, "stream %d (%s) did not complete: %s", s.I, s.Kind, s.Error)
			assert.Equal(t, want, s.Text, "stream %d (%s)", s.I, s.Kind)
		}
	}
	checkDrainedStore(t, store, ended)

	// Another process on the store reads each response as it ended.
	base, _ = serveInProcess(t, args...)
	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(token), option.WithMaxRetries(0))
	for _, s := range ended {
		if strings.HasPrefix(s.Kind, "chat-") {
			continue
		}
		r, err := client.Responses.Get(t.Context(), s.ID, responses.ResponseGetParams{})
		require.NoError(t, err, "stream %d (%s)", s.I, s.Kind)
		if s.Kind == "long" {
			assert.Equal(t, responses.ResponseStatusCancelled, r.Status, "stream %d", s.I)
			assert.Empty(t, r.OutputText(), "stream %d: a half-written message was kept", s.I)
		} else {
			assert.Equal(t, responses.ResponseStatusCompleted, r.Status, "stream %d (%s)", s.I, s.Kind)
			assert.Equal(t, s.Text, r.OutputText(), "stream %d (%s)", s.I, s.Kind)
		}
	}
}

// checkDrainedStore reads each stored conversation: one per response stream,
// its prompt once, each of its tool calls answered once, and the answer of
// a completed stream whole, once.
func checkDrainedStore(t *testing.T, path string, ended []drainedStream) {
	t.Helper()
	store, err := sqlitestore.Open(t.Context(), path)
	require.NoError(t, err)
	defer store.Close()
	var convs []robby.Conversation
	for cursor := ""; ; {
		page, next, err := store.List(t.Context(), "", robby.ListOptions{Cursor: cursor})
		require.NoError(t, err)
		convs = append(convs, page...)
		if cursor = next; next == "" {
			break
		}
	}
	byPrompt := map[string][]chattext.Message{}
	for _, c := range convs {
		_, msgs, err := store.Load(t.Context(), "", c.ID)
		require.NoError(t, err)
		var chat []chattext.Message
		for _, m := range msgs {
			if m.Chat == nil {
				continue // the record of the error that ended a run
			}
			var cm chattext.Message
			require.NoError(t, json.Unmarshal(m.Chat, &cm))
			chat = append(chat, cm)
		}
		require.NotEmpty(t, chat, "conversation %s", c.ID)
		require.Equal(t, "user", chat[0].Role)
		prompt := chattext.Content(chat[0].Content)
		assert.NotContains(t, byPrompt, prompt, "%q stored twice", prompt)
		byPrompt[prompt] = chat
	}
	responses := 0
	for _, s := range ended {
		if strings.HasPrefix(s.Kind, "chat-") {
			continue
		}
		responses++
		chat, ok := byPrompt[fmt.Sprintf("%s %d", s.Kind, s.I)]
		if !assert.True(t, ok, "stream %d (%s) not stored", s.I, s.Kind) {
			continue
		}
		calls, answers := map[string]int{}, 0
		for _, m := range chat[1:] {
			switch {
			case m.Role == "tool":
				calls[m.ToolCallID]++
			case m.Role == "assistant":
				for _, c := range m.ToolCalls {
					calls[c.ID] += 0
				}
				if text := chattext.Content(m.Content); text != "" {
					answers++
					assert.Equal(t, drainAnswer(s.Kind, s.I), text, "stream %d (%s): a half-written answer", s.I, s.Kind)
				}
			}
		}
		for id, n := range calls {
			assert.Equal(t, 1, n, "stream %d: call %s has %d results", s.I, id, n)
		}
		if s.Kind == "long" {
			assert.Zero(t, answers, "stream %d", s.I)
		} else {
			assert.Equal(t, 1, answers, "stream %d (%s)", s.I, s.Kind)
		}
	}
	assert.Len(t, byPrompt, responses, "stored conversations")
}
