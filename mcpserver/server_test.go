package mcpserver_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/mcpserver"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/robbytest/agenttest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newAgent returns an agent on a scripted endpoint, with a local tool
// get_weather, and the endpoint.
func newAgent(t *testing.T, replies ...robbytest.Reply) (*robby.Agent, *robbytest.Server) {
	t.Helper()
	upstream := agenttest.NewServer(t, replies...)
	weather := robby.NewTool("get_weather", "The weather in a city",
		func(_ context.Context, in struct {
			City string `json:"city"`
		}) (string, error) {
			return "sunny in " + in.City, nil
		})
	return agenttest.New(t, upstream, robby.WithSystem("You are helpful."), robby.WithTools(weather)), upstream
}

// newServer returns a server for agent with opts.
func newServer(t *testing.T, agent *robby.Agent, opts mcpserver.Options) *mcpserver.Server {
	t.Helper()
	srv, err := mcpserver.New(agent, opts)
	require.NoError(t, err)
	return srv
}

// progressLog collects the progress notifications a client receives.
type progressLog struct {
	mu    sync.Mutex
	notes []*mcp.ProgressNotificationParams
}

func (l *progressLog) handle(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notes = append(l.notes, req.Params)
}

// wait waits for n notifications.
func (l *progressLog) wait(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(l.messages()) >= n }, 5*time.Second, time.Millisecond,
		"%d progress notifications expected", n)
}

func (l *progressLog) messages() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var msgs []string
	for _, n := range l.notes {
		msgs = append(msgs, n.Message)
	}
	return msgs
}

// connect serves srv over an in-memory transport and returns a go-sdk
// client session to it.
func connect(t *testing.T, srv *mcpserver.Server, log *progressLog) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, st) }()
	opts := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
	if log != nil {
		opts.ProgressNotificationHandler = log.handle
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(t.Context(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return cs
}

func ask(t *testing.T, cs *mcp.ClientSession, prompt string, progressToken any) *mcp.CallToolResult {
	t.Helper()
	params := &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"prompt": prompt}}
	if progressToken != nil {
		params.SetProgressToken(progressToken)
	}
	res, err := cs.CallTool(t.Context(), params)
	require.NoError(t, err)
	return res
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.Len(t, res.Content, 1)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "content is %T", res.Content[0])
	return tc.Text
}

func TestAskOffersOneTool(t *testing.T) {
	agent, _ := newAgent(t)
	cs := connect(t, newServer(t, agent, mcpserver.Options{Name: "weatherman", Description: "Ask the weatherman."}), nil)
	assert.Equal(t, "weatherman", cs.InitializeResult().ServerInfo.Name)
	tools, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 1)
	tool := tools.Tools[0]
	assert.Equal(t, mcpserver.ToolName, tool.Name)
	assert.Equal(t, "Ask the weatherman.", tool.Description)
	schema, ok := tool.InputSchema.(map[string]any)
	require.True(t, ok)
	assert.Equal(t, []any{"prompt"}, schema["required"])
	assert.Contains(t, schema["properties"], "prompt")
	assert.Nil(t, tool.OutputSchema, "the answer is text")
}

func TestAskRunsTheAgentWithProgress(t *testing.T) {
	agent, upstream := newAgent(t,
		robbytest.ToolCalls(robbytest.Call("get_weather", `{"city":"Lisbon"}`)),
		robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			return robbytest.Text("The tool says: " + req.Messages[len(req.Messages)-1].Content)
		}),
	)
	var log progressLog
	cs := connect(t, newServer(t, agent, mcpserver.Options{}), &log)
	res := ask(t, cs, "What is the weather in Lisbon?", "tok-1")
	assert.False(t, res.IsError)
	assert.Equal(t, "The tool says: sunny in Lisbon", text(t, res))

	reqs := upstream.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "system", reqs[0].Messages[0].Role, "the agent's system prompt")
	assert.Equal(t, "What is the weather in Lisbon?", reqs[0].Messages[1].Content)

	// The client handles notifications asynchronously: they may come
	// after the answer.
	log.wait(t, 3)
	assert.Equal(t, `turn 1: calling get_weather {"city":"Lisbon"}`, log.messages()[0])
	assert.Regexp(t, `^turn 1: get_weather done in \d.*s$`, log.messages()[1])
	assert.Equal(t, "turn 2: answering", log.messages()[2])
	log.mu.Lock()
	defer log.mu.Unlock()
	for i, n := range log.notes {
		assert.Equal(t, "tok-1", n.ProgressToken)
		assert.Equal(t, float64(i+1), n.Progress, "progress increases")
	}
}

func TestAskWithoutProgressTokenSendsNone(t *testing.T) {
	agent, _ := newAgent(t,
		robbytest.ToolCalls(robbytest.Call("get_weather", `{"city":"Oslo"}`)), robbytest.Text("Sunny."),
		robbytest.ToolCalls(robbytest.Call("get_weather", `{"city":"Oslo"}`)), robbytest.Text("Sunny."))
	var log progressLog
	cs := connect(t, newServer(t, agent, mcpserver.Options{}), &log)
	assert.Equal(t, "Sunny.", text(t, ask(t, cs, "Weather in Oslo?", nil)))
	assert.Equal(t, "Sunny.", text(t, ask(t, cs, "Weather in Oslo?", "second")))
	// Notifications arrive in order: once the second call's are in, any of
	// the first would be too.
	log.wait(t, 3)
	time.Sleep(50 * time.Millisecond)
	log.mu.Lock()
	defer log.mu.Unlock()
	require.Len(t, log.notes, 3)
	for _, n := range log.notes {
		assert.Equal(t, "second", n.ProgressToken)
	}
}

func TestEachCallIsAConversationOfItsOwn(t *testing.T) {
	agent, upstream := newAgent(t, robbytest.Text("Hi Bob."), robbytest.Text("I don't know."))
	cs := connect(t, newServer(t, agent, mcpserver.Options{}), nil)
	ask(t, cs, "I am Bob", nil)
	ask(t, cs, "Who am I?", nil)
	reqs := upstream.Requests()
	require.Len(t, reqs, 2)
	require.Len(t, reqs[1].Messages, 2, "the system prompt and the second prompt only")
	assert.Equal(t, "Who am I?", reqs[1].Messages[1].Content)
	assert.Len(t, agent.Messages(), 1, "the served agent's own conversation is untouched")
}

func TestAskErrorsAreToolErrors(t *testing.T) {
	agent, _ := newAgent(t, robbytest.Error(http.StatusBadRequest, `{"error":{"message":"model not found"}}`))
	cs := connect(t, newServer(t, agent, mcpserver.Options{}), nil)

	res := ask(t, cs, "  ", nil)
	assert.True(t, res.IsError)
	assert.Contains(t, text(t, res), "the prompt is empty")

	res = ask(t, cs, "hello", nil)
	assert.True(t, res.IsError)
	assert.Contains(t, text(t, res), "model not found")

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.True(t, res.IsError, "a missing prompt")
}

func TestAskHidesTheUpstreamFromTheHost(t *testing.T) {
	agent, err := robby.New(robby.WithBaseURL("http://127.0.0.1:1/v1"), robby.WithModel("m"),
		robby.WithRequestOptions(option.WithMaxRetries(0)))
	require.NoError(t, err)
	t.Cleanup(func() { agent.Close() })
	var log bytes.Buffer
	cs := connect(t, newServer(t, agent, mcpserver.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))}), nil)
	res := ask(t, cs, "hello", nil)
	assert.True(t, res.IsError)
	msg := text(t, res)
	assert.NotContains(t, msg, "127.0.0.1", "the host does not learn the upstream address")
	id := regexp.MustCompile(`error id (\w+)`).FindStringSubmatch(msg)
	require.NotNil(t, id, msg)
	assert.Contains(t, log.String(), "id="+id[1], "the server's log has the details under the same id")
	assert.Contains(t, log.String(), "127.0.0.1:1")
}

// TestAskKeepsThePartialAnswerOfAFailedRun: a run that reaches the turn
// limit or its budget is a tool error saying so, with what the agent
// wrote before it stopped.
func TestAskKeepsThePartialAnswerOfAFailedRun(t *testing.T) {
	for name, limit := range map[string]robby.Option{
		"turns":  robby.WithMaxTurns(1),
		"budget": robby.WithBudget(robby.Budget{ModelCalls: 1}),
	} {
		t.Run(name, func(t *testing.T) {
			upstream := agenttest.NewServer(t, robbytest.ToolCalls(robbytest.Call("get_weather", `{"city":"Rome"}`)).WithText("Let me look."))
			weather := robby.NewTool("get_weather", "The weather", func(context.Context, struct{}) (string, error) { return "hot", nil })
			agent := agenttest.New(t, upstream, robby.WithTools(weather), limit)
			cs := connect(t, newServer(t, agent, mcpserver.Options{}), nil)
			res := ask(t, cs, "Weather in Rome?", nil)
			assert.True(t, res.IsError)
			want := map[string]string{"turns": robby.ErrMaxTurns.Error(), "budget": "budget reached: 1 used of 1 model calls"}[name]
			assert.Contains(t, text(t, res), want)
			assert.Contains(t, text(t, res), "Let me look.")
		})
	}
}

func TestCancelledCallStopsTheRun(t *testing.T) {
	agent, _ := newAgent(t, robbytest.Text("a slow answer that never comes in time").WithDelay(time.Second))
	cs := connect(t, newServer(t, agent, mcpserver.Options{}), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"prompt": "hi"}})
	require.Error(t, err)
	assert.Less(t, time.Since(start), 2*time.Second)
}

// blockingAgent returns an agent whose model calls the tool wait, which
// blocks until its context is done and then closes the returned channel.
func blockingAgent(t *testing.T) (*robby.Agent, <-chan struct{}) {
	t.Helper()
	upstream := agenttest.NewServer(t, robbytest.ToolCalls(robbytest.Call("wait", `{}`)))
	cancelled := make(chan struct{})
	wait := robby.NewTool("wait", "Wait", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		close(cancelled)
		return "", ctx.Err()
	})
	return agenttest.New(t, upstream, robby.WithTools(wait), robby.WithToolTimeout(0)), cancelled
}

func TestCancelledCallCancelsTheTools(t *testing.T) {
	for _, transport := range []string{"memory", "http 2025-11-25", "http latest"} {
		t.Run(transport, func(t *testing.T) {
			agent, cancelled := blockingAgent(t)
			srv := newServer(t, agent, mcpserver.Options{})
			var cs *mcp.ClientSession
			if transport == "memory" {
				cs = connect(t, srv, nil)
			} else {
				version := strings.TrimPrefix(transport, "http ")
				if version == "latest" {
					version = ""
				}
				var err error
				cs, err = mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(),
					&mcp.StreamableClientTransport{Endpoint: serveHTTP(t, srv)}, &mcp.ClientSessionOptions{ProtocolVersion: version})
				require.NoError(t, err)
				defer cs.Close()
			}
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"prompt": "wait"}})
			require.Error(t, err)
			select {
			case <-cancelled:
			case <-time.After(5 * time.Second):
				t.Fatal("the agent's tool still runs after the host cancelled the call")
			}
		})
	}
}

func TestConcurrentCalls(t *testing.T) {
	echo := robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		return robbytest.Text("answer to " + req.Messages[len(req.Messages)-1].Content)
	})
	replies := make([]robbytest.Reply, 8)
	for i := range replies {
		replies[i] = echo
	}
	agent, _ := newAgent(t, replies...)
	cs := connect(t, newServer(t, agent, mcpserver.Options{}), nil)
	var wg sync.WaitGroup
	for _, q := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		wg.Go(func() {
			assert.Equal(t, "answer to "+q, text(t, ask(t, cs, q, nil)))
		})
	}
	wg.Wait()
}

// serveHTTP serves srv on a local address and returns its URL.
func serveHTTP(t *testing.T, srv *mcpserver.Server) string {
	t.Helper()
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs.URL
}

// headerTransport adds a header to every request.
type headerTransport struct{ key, value string }

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set(h.key, h.value)
	return http.DefaultTransport.RoundTrip(req)
}

func TestStreamableHTTPWithToken(t *testing.T) {
	agent, _ := newAgent(t,
		robbytest.ToolCalls(robbytest.Call("get_weather", `{"city":"Paris"}`)),
		robbytest.Text("Sunny in Paris."))
	url := serveHTTP(t, newServer(t, agent, mcpserver.Options{Token: "s3cret"}))

	for _, auth := range []string{"", "Bearer wrong", "Basic s3cret"} {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "Authorization %q", auth)
	}

	var log progressLog
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"},
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}, ProgressNotificationHandler: log.handle})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url,
		// The scheme is matched in any case.
		HTTPClient: &http.Client{Transport: headerTransport{"Authorization", "bearer s3cret"}}}, nil)
	require.NoError(t, err)
	defer cs.Close()
	assert.Equal(t, "Sunny in Paris.", text(t, ask(t, cs, "Weather in Paris?", 7)))
	log.wait(t, 3)
	assert.Equal(t, "turn 2: answering", log.messages()[2], "progress streams over HTTP too")
}

func TestStreamableHTTPRefusesWebPages(t *testing.T) {
	agent, upstream := newAgent(t)
	url := serveHTTP(t, newServer(t, agent, mcpserver.Options{}))
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{"prompt":"rm -rf"}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)

	// DNS rebinding: a loopback server reached under another name.
	req, err = http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Host = "evil.example"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Empty(t, upstream.Requests(), "nothing ran")
}

var citySchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"name":       map[string]any{"type": "string"},
		"population": map[string]any{"type": "integer"},
	},
	"required":             []any{"name", "population"},
	"additionalProperties": false,
}

// With an output schema, ask declares it and answers with structured
// content, checked and repaired as a typed run is.
func TestAskWithOutputSchema(t *testing.T) {
	agent, upstream := newAgent(t,
		robbytest.Answer(`{"name": "Lisbon"}`), // repaired: population is missing
		robbytest.Answer(`{"name": "Lisbon", "population": 545796}`),
	)
	cs := connect(t, newServer(t, agent, mcpserver.Options{OutputSchema: citySchema}), nil)
	tools, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 1)
	schema, ok := tools.Tools[0].OutputSchema.(map[string]any)
	require.True(t, ok, "output schema %T", tools.Tools[0].OutputSchema)
	assert.Equal(t, []any{"name", "population"}, schema["required"])

	res := ask(t, cs, "Describe Lisbon", nil)
	require.False(t, res.IsError, "%v", res.Content)
	assert.Equal(t, map[string]any{"name": "Lisbon", "population": 545796.0}, res.StructuredContent)
	assert.JSONEq(t, `{"name": "Lisbon", "population": 545796}`, text(t, res))
	reqs := upstream.Requests()
	require.Len(t, reqs, 2)
	assert.NotNil(t, reqs[0].ResponseFormat, "asked for natively")
	assert.Contains(t, reqs[1].Messages[len(reqs[1].Messages)-1].Content, `missing required field "population"`)
}

func TestAskWithOutputSchemaReportsAnAnswerThatNeverFits(t *testing.T) {
	bad := robbytest.Answer(`{"name": "Lisbon"}`)
	agent, _ := newAgent(t, bad, bad, bad)
	cs := connect(t, newServer(t, agent, mcpserver.Options{OutputSchema: citySchema}), nil)
	res := ask(t, cs, "Describe Lisbon", nil)
	assert.True(t, res.IsError)
	assert.Contains(t, text(t, res), `the answer does not fit the schema after 3 answers`)
	assert.Contains(t, text(t, res), `missing required field "population"`)
}

// TestNewRefusesOptionsItCannotServe: New names the option it cannot
// serve, and panics on none.
func TestNewRefusesOptionsItCannotServe(t *testing.T) {
	agent, upstream := newAgent(t)
	tests := []struct {
		agent *robby.Agent
		opts  mcpserver.Options
		want  string
	}{
		{agent, mcpserver.Options{OutputSchema: map[string]any{"type": "string"}},
			`mcpserver: Options.OutputSchema: the answer must be an object: give the schema "type": "object", not "string"`},
		{agent, mcpserver.Options{OutputSchema: map[string]any{"properties": map[string]any{}}}, `not ""`},
		{agent, mcpserver.Options{OutputSchema: map[string]any{"type": "object", "properties": 3}}, "mcpserver: Options.OutputSchema: "},
		{agent, mcpserver.Options{OutputSchema: map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/none"}}}},
			"mcpserver: Options.OutputSchema: "},
		{agent, mcpserver.Options{OutputSchema: map[string]any{"type": "object", "bad": func() {}}}, "mcpserver: Options.OutputSchema: json: unsupported type"},
		{agent, mcpserver.Options{OutputSchema: citySchema, AnswerMode: robby.AnswerPrompted + 1}, "mcpserver: Options.AnswerMode: unknown mode AnswerMode(4)"},
		{agent, mcpserver.Options{AnswerMode: robby.AnswerTool}, "mcpserver: Options.AnswerMode and MaxRepairs are those of an OutputSchema's answer"},
		{agent, mcpserver.Options{MaxRepairs: 1}, "mcpserver: Options.AnswerMode and MaxRepairs are those of an OutputSchema's answer"},
		{nil, mcpserver.Options{}, "mcpserver: New: nil agent"},
	}
	for _, tt := range tests {
		srv, err := mcpserver.New(tt.agent, tt.opts)
		assert.Nil(t, srv)
		assert.ErrorContains(t, err, tt.want)
	}
	assert.Empty(t, upstream.Requests())
}

// TestAskAnswerModeAndRepairs: Options.AnswerMode and MaxRepairs are those
// of each call's typed run; changing the caller's schema map after New
// changes nothing.
func TestAskAnswerModeAndRepairs(t *testing.T) {
	bad := robbytest.Answer(`{"name": "Lisbon"}`)
	agent, upstream := newAgent(t, bad)
	schema := map[string]any{
		"type":       "object",
		"properties": map[string]any{"name": map[string]any{"type": "string"}, "population": map[string]any{"type": "integer"}},
		"required":   []any{"name", "population"},
	}
	cs := connect(t, newServer(t, agent, mcpserver.Options{OutputSchema: schema, AnswerMode: robby.AnswerTool, MaxRepairs: -1}), nil)
	schema["required"] = []any{"name"}
	schema["properties"].(map[string]any)["population"] = map[string]any{"type": "string"}
	res := ask(t, cs, "Describe Lisbon", nil)
	assert.True(t, res.IsError)
	assert.Contains(t, text(t, res), `after 1 answers (tool mode): /: missing required field "population"`)
	reqs := upstream.Requests()
	require.Len(t, reqs, 1, "no repair")
	assert.Nil(t, reqs[0].ResponseFormat)
	assert.Contains(t, reqs[0].Tools, "final_answer")

	upstream.Reply(bad, robbytest.Answer(`{"name": "Lisbon", "population": 545796}`))
	cs = connect(t, newServer(t, agent, mcpserver.Options{OutputSchema: citySchema, AnswerMode: robby.AnswerPrompted, MaxRepairs: 1}), nil)
	res = ask(t, cs, "Describe Lisbon", nil)
	require.False(t, res.IsError, "%v", text(t, res))
	assert.Equal(t, map[string]any{"name": "Lisbon", "population": 545796.0}, res.StructuredContent)
	reqs = upstream.Requests()[1:]
	require.Len(t, reqs, 2)
	assert.NotContains(t, reqs[0].Tools, "final_answer")
	assert.Nil(t, reqs[0].ResponseFormat)
	assert.Contains(t, reqs[0].Messages[1].Content, `"population"`, "the schema in a system message")
}
