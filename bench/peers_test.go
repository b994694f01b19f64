package bench

// BenchmarkPeers runs one three-turn tool conversation with robby, the floor
// (net/http and encoding/json by hand: floor_test.go), raw openai-go, eino's
// react agent and langchaingo's OpenAI functions agent,
// not streamed and streamed, against the same in-process fake OpenAI server:
//
//	turn 1: the model calls add{1,2} and mul{3,4} in parallel
//	turn 2: the model calls add{3,12}
//	turn 3: the model answers benchAnswer
//
// Every iteration checks the final text and that the three tool calls ran.
// Each framework is measured twice: with the agent (or client) built inside
// the iteration ("robby", ...) and built once and reused ("robby-reuse", ...).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"

	einoopenai "github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/components/tool"
	einoutils "github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	einoschema "github.com/cloudwego/eino/schema"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	lcopenai "github.com/tmc/langchaingo/llms/openai"
	lctools "github.com/tmc/langchaingo/tools"
)

const (
	benchModel  = "m"
	benchPrompt = "What is (1 + 2) + 3 * 4?"
	benchAnswer = "(1 + 2) + 3 * 4 = 15."
	benchCalls  = 3
)

// --- the tools, shared by every framework; calls counts their runs ---

type benchArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

var calls atomic.Int64

func benchAdd(_ context.Context, in benchArgs) (int, error) { calls.Add(1); return in.A + in.B, nil }
func benchMul(_ context.Context, in benchArgs) (int, error) { calls.Add(1); return in.A * in.B, nil }

// checkCalls fails unless exactly the conversation's three calls ran since
// the counter was last reset.
func checkCalls(tb testing.TB, who string) {
	if n := calls.Swap(0); n != benchCalls {
		tb.Fatalf("%s: %d tool runs, want %d", who, n, benchCalls)
	}
}

func checkText(tb testing.TB, who, text string) {
	if text != benchAnswer {
		tb.Fatalf("%s: got %q, want %q", who, text, benchAnswer)
	}
}

// rawTool is hand-written glue: decode with encoding/json, call, encode.
func rawTool(fn func(context.Context, benchArgs) (int, error)) func(context.Context, string) (string, error) {
	return func(ctx context.Context, args string) (string, error) {
		var in benchArgs
		if err := json.Unmarshal([]byte(args), &in); err != nil {
			return "", err
		}
		out, err := fn(ctx, in)
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(out)
		return string(b), err
	}
}

var rawDispatch = map[string]func(context.Context, string) (string, error){
	"add": rawTool(benchAdd),
	"mul": rawTool(benchMul),
}

func dispatch(ctx context.Context, name, args string) string {
	fn := rawDispatch[name]
	if fn == nil {
		return "Error: unknown tool " + name
	}
	out, err := fn(ctx, args)
	if err != nil {
		return "Error: " + err.Error()
	}
	return out
}

// sharedHTTPClient is the long-lived HTTP client of the peers, built as robby
// builds its shared default one, so that every side reuses connections alike.
var sharedHTTPClient = sync.OnceValue(func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = 10 * time.Minute
	return &http.Client{Transport: t}
})

// --- the fake server ---

// capture returns the bodies a robbytest server sends for replies, streamed
// or not (with a usage chunk when streamed).
func capture(tb testing.TB, stream bool, replies ...robbytest.Reply) [][]byte {
	tb.Helper()
	srv := robbytest.NewServer()
	defer srv.Close()
	srv.Reply(replies...)
	req := fmt.Sprintf(`{"model":%q,"stream":%t,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, benchModel, stream)
	var bodies [][]byte
	for range replies {
		res, err := srv.Client().Post(srv.URL+"/chat/completions", "application/json", strings.NewReader(req))
		if err != nil {
			tb.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			tb.Fatalf("capturing a reply: %v %v: %s", res.Status, err, body)
		}
		bodies = append(bodies, body)
	}
	return bodies
}

// A fakeServer answers each request with a precomputed body chosen by the
// number of tool messages in the request (0, 2 or 3: the turn), which is
// the same whatever system prompt a framework adds. Streamed requests
// ("stream":true) get chat.completion.chunk SSE ending in [DONE], the others
// a chat.completion.
type fakeServer struct {
	*httptest.Server
	URL    string // base URL for the clients, ending in /v1
	plain  map[int][]byte
	stream map[int][]byte
	bufs   sync.Pool
}

var (
	toolRole    = []byte(`"role":"tool"`)
	toolRoleSp  = []byte(`"role": "tool"`)
	streamTrue  = []byte(`"stream":true`)
	streamTrue2 = []byte(`"stream": true`)
)

func newFakeServer(tb testing.TB) *fakeServer {
	call := func(id, name, args string) robbytest.ToolCall {
		c := robbytest.Call(name, args)
		c.ID = id
		return c
	}
	replies := []robbytest.Reply{
		robbytest.ToolCalls(call("call_1", "add", `{"a":1,"b":2}`), call("call_2", "mul", `{"a":3,"b":4}`)),
		robbytest.ToolCalls(call("call_3", "add", `{"a":3,"b":12}`)),
		robbytest.Text(benchAnswer),
	}
	p := capture(tb, false, replies...)
	s := capture(tb, true, replies...)
	f := &fakeServer{
		plain:  map[int][]byte{0: p[0], 2: p[1], 3: p[2]},
		stream: map[int][]byte{0: s[0], 2: s[1], 3: s[2]},
	}
	f.bufs.New = func() any { return new(bytes.Buffer) }
	f.Server = httptest.NewServer(f)
	f.URL = f.Server.URL + "/v1"
	tb.Cleanup(f.Close)
	return f
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	buf := f.bufs.Get().(*bytes.Buffer)
	defer f.bufs.Put(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b := buf.Bytes()
	n := bytes.Count(b, toolRole) + bytes.Count(b, toolRoleSp)
	replies, ctype := f.plain, "application/json"
	if bytes.Contains(b, streamTrue) || bytes.Contains(b, streamTrue2) {
		replies, ctype = f.stream, "text/event-stream"
	}
	body, ok := replies[n]
	if !ok {
		http.Error(w, fmt.Sprintf("fake server: no reply for a request with %d tool messages", n), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Write(body)
}

// --- robby ---

func newRobby(tb testing.TB, url string) *robby.Agent {
	a, err := robby.New(robby.WithBaseURL(url), robby.WithAPIKey(""), robby.WithModel(benchModel),
		robby.WithTools(
			robby.NewTool("add", "Adds two integers.", benchAdd),
			robby.NewTool("mul", "Multiplies two integers.", benchMul),
		))
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

func robbySync(tb testing.TB, ctx context.Context, a *robby.Agent) {
	res, err := a.Run(ctx, benchPrompt)
	if err != nil {
		tb.Fatal(err)
	}
	checkText(tb, "robby", res.Text)
	checkCalls(tb, "robby")
}

func robbyStream(tb testing.TB, ctx context.Context, a *robby.Agent) {
	var streamed strings.Builder
	var final string
	for ev, err := range a.Stream(ctx, benchPrompt) {
		if err != nil {
			tb.Fatal(err)
		}
		switch ev.Kind {
		case robby.EventText:
			streamed.WriteString(ev.Delta)
		case robby.EventDone:
			final = ev.Result.Text
		}
	}
	checkText(tb, "robby", streamed.String())
	checkText(tb, "robby", final)
	checkCalls(tb, "robby")
}

// --- raw openai-go ---

func rawToolParams() []openai.ChatCompletionToolUnionParam {
	schema := func() shared.FunctionParameters {
		return shared.FunctionParameters{
			"type": "object",
			"properties": map[string]any{
				"a": map[string]any{"type": "integer"},
				"b": map[string]any{"type": "integer"},
			},
			"required":             []any{"a", "b"},
			"additionalProperties": false,
		}
	}
	return []openai.ChatCompletionToolUnionParam{
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "add", Description: openai.String("Adds two integers."), Parameters: schema(),
		}),
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "mul", Description: openai.String("Multiplies two integers."), Parameters: schema(),
		}),
	}
}

type rawAgent struct {
	client openai.Client
	tools  []openai.ChatCompletionToolUnionParam
}

func newRaw(url string) *rawAgent {
	return &rawAgent{
		client: openai.NewClient(option.WithHTTPClient(sharedHTTPClient()), option.WithBaseURL(url), option.WithAPIKey("")),
		tools:  rawToolParams(),
	}
}

// rawSync is a hand-written ReAct loop: request, dispatch every call by
// name, append the assistant message and the tool messages, until an answer.
func rawSync(tb testing.TB, ctx context.Context, r *rawAgent) {
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(benchPrompt)}
	for turn := 1; ; turn++ {
		if turn > 10 {
			tb.Fatal("openai-go: too many turns")
		}
		res, err := r.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: benchModel, Messages: msgs, Tools: r.tools,
		})
		if err != nil {
			tb.Fatal(err)
		}
		if len(res.Choices) == 0 {
			tb.Fatal("openai-go: no choices")
		}
		msg := res.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			checkText(tb, "openai-go", msg.Content)
			checkCalls(tb, "openai-go")
			return
		}
		msgs = append(msgs, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			msgs = append(msgs, openai.ToolMessage(dispatch(ctx, tc.Function.Name, tc.Function.Arguments), tc.ID))
		}
	}
}

func rawStreamTurn(tb testing.TB, ctx context.Context, r *rawAgent, msgs []openai.ChatCompletionMessageParamUnion, streamed *strings.Builder) openai.ChatCompletionMessage {
	s := r.client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: benchModel, Messages: msgs, Tools: r.tools,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	defer s.Close()
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		chunk := s.Current()
		if !acc.AddChunk(chunk) {
			tb.Fatal("openai-go: chunk rejected by the accumulator")
		}
		if len(chunk.Choices) > 0 {
			streamed.WriteString(chunk.Choices[0].Delta.Content)
		}
	}
	if err := s.Err(); err != nil {
		tb.Fatal(err)
	}
	if len(acc.Choices) == 0 || acc.Choices[0].FinishReason == "" {
		tb.Fatal("openai-go: incomplete stream")
	}
	return acc.Choices[0].Message
}

func rawStream(tb testing.TB, ctx context.Context, r *rawAgent) {
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(benchPrompt)}
	var streamed strings.Builder
	for turn := 1; ; turn++ {
		if turn > 10 {
			tb.Fatal("openai-go: too many turns")
		}
		msg := rawStreamTurn(tb, ctx, r, msgs, &streamed)
		if len(msg.ToolCalls) == 0 {
			checkText(tb, "openai-go", streamed.String())
			checkText(tb, "openai-go", msg.Content)
			checkCalls(tb, "openai-go")
			return
		}
		msgs = append(msgs, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			msgs = append(msgs, openai.ToolMessage(dispatch(ctx, tc.Function.Name, tc.Function.Arguments), tc.ID))
		}
	}
}

// --- eino (react agent over eino-ext's OpenAI chat model) ---

func newEino(tb testing.TB, ctx context.Context, url string) *react.Agent {
	cm, err := einoopenai.NewChatModel(ctx, &einoopenai.ChatModelConfig{
		BaseURL: url, APIKey: "", Model: benchModel, HTTPClient: sharedHTTPClient(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	add, err := einoutils.InferTool("add", "Adds two integers.", benchAdd)
	if err != nil {
		tb.Fatal(err)
	}
	mul, err := einoutils.InferTool("mul", "Multiplies two integers.", benchMul)
	if err != nil {
		tb.Fatal(err)
	}
	a, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: cm,
		ToolsConfig:      compose.ToolsNodeConfig{Tools: []tool.BaseTool{add, mul}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

func einoSync(tb testing.TB, ctx context.Context, a *react.Agent) {
	msg, err := a.Generate(ctx, []*einoschema.Message{einoschema.UserMessage(benchPrompt)})
	if err != nil {
		tb.Fatal(err)
	}
	checkText(tb, "eino", msg.Content)
	checkCalls(tb, "eino")
}

func einoStream(tb testing.TB, ctx context.Context, a *react.Agent) {
	sr, err := a.Stream(ctx, []*einoschema.Message{einoschema.UserMessage(benchPrompt)})
	if err != nil {
		tb.Fatal(err)
	}
	defer sr.Close()
	var streamed strings.Builder
	for {
		chunk, err := sr.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
		streamed.WriteString(chunk.Content)
	}
	checkText(tb, "eino", streamed.String())
	checkCalls(tb, "eino")
}

// --- langchaingo (OpenAI functions agent and executor) ---

type lcTool struct {
	name, desc string
	fn         func(context.Context, string) (string, error)
}

func (t lcTool) Name() string                                           { return t.name }
func (t lcTool) Description() string                                    { return t.desc }
func (t lcTool) Call(ctx context.Context, input string) (string, error) { return t.fn(ctx, input) }

func newLangchain(tb testing.TB, url string) *agents.Executor {
	llm, err := lcopenai.New(lcopenai.WithBaseURL(url), lcopenai.WithToken("x"), lcopenai.WithModel(benchModel),
		lcopenai.WithHTTPClient(sharedHTTPClient()))
	if err != nil {
		tb.Fatal(err)
	}
	ag := agents.NewOpenAIFunctionsAgent(llm, []lctools.Tool{
		lcTool{"add", "Adds two integers.", rawTool(benchAdd)},
		lcTool{"mul", "Multiplies two integers.", rawTool(benchMul)},
	})
	return agents.NewExecutor(ag)
}

func langchainSync(tb testing.TB, ctx context.Context, e *agents.Executor) {
	out, err := chains.Run(ctx, e, benchPrompt)
	if err != nil {
		tb.Fatal(err)
	}
	checkText(tb, "langchaingo", out)
	checkCalls(tb, "langchaingo")
}

func langchainStream(tb testing.TB, ctx context.Context, e *agents.Executor) {
	var streamed strings.Builder
	out, err := chains.Run(ctx, e, benchPrompt, chains.WithStreamingFunc(func(_ context.Context, chunk []byte) error {
		// langchaingo passes the tool-call deltas to the same function, as
		// JSON arrays; a caller that wants the text must skip them.
		if len(chunk) > 0 && chunk[0] == '[' && json.Valid(chunk) {
			return nil
		}
		streamed.Write(chunk)
		return nil
	}))
	if err != nil {
		tb.Fatal(err)
	}
	checkText(tb, "langchaingo", streamed.String())
	checkText(tb, "langchaingo", out)
	checkCalls(tb, "langchaingo")
}

// --- the benchmark ---

// A peer is one framework's two benchmarks: its agent built inside each
// iteration, and built once and reused.
type peer struct {
	name          string
	fresh, reused func(*testing.B)
}

// newPeer makes a peer of build, which makes an agent, and run, which holds
// the conversation with it; reset, if not nil, clears a reused agent's
// memory before each run. Each benchmark starts with the tool-run counter
// at zero.
func newPeer[A any](name string, build func(testing.TB) A, reset func(A), run func(testing.TB, context.Context, A)) peer {
	ctx := context.Background()
	return peer{
		name: name,
		fresh: func(b *testing.B) {
			calls.Store(0)
			b.ReportAllocs()
			for b.Loop() {
				run(b, ctx, build(b))
			}
		},
		reused: func(b *testing.B) {
			a := build(b)
			calls.Store(0)
			b.ReportAllocs()
			for b.Loop() {
				if reset != nil {
					reset(a)
				}
				run(b, ctx, a)
			}
		},
	}
}

func BenchmarkPeers(b *testing.B) {
	srv := newFakeServer(b)
	url := srv.URL
	robbyAgent := func(tb testing.TB) *robby.Agent { return newRobby(tb, url) }
	rawAgent := func(testing.TB) *rawAgent { return newRaw(url) }
	floorAgent := func(testing.TB) *floorAgent { return newFloor(url) }
	einoAgent := func(tb testing.TB) *react.Agent { return newEino(tb, context.Background(), url) }
	langchainAgent := func(tb testing.TB) *agents.Executor { return newLangchain(tb, url) }
	for _, mode := range []struct {
		name  string
		peers []peer
	}{
		{"sync", []peer{
			newPeer("robby", robbyAgent, (*robby.Agent).Reset, robbySync),
			newPeer("floor", floorAgent, nil, floorSync),
			newPeer("openai-go", rawAgent, nil, rawSync),
			newPeer("eino", einoAgent, nil, einoSync),
			newPeer("langchaingo", langchainAgent, nil, langchainSync),
		}},
		{"stream", []peer{
			newPeer("robby", robbyAgent, (*robby.Agent).Reset, robbyStream),
			newPeer("floor", floorAgent, nil, floorStream),
			newPeer("openai-go", rawAgent, nil, rawStream),
			newPeer("eino", einoAgent, nil, einoStream),
			newPeer("langchaingo", langchainAgent, nil, langchainStream),
		}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			for _, p := range mode.peers {
				b.Run(p.name, p.fresh)
			}
			// eino's agent and langchaingo's executor hold no history;
			// robby's is reset; openai-go reuses its client.
			for _, p := range mode.peers {
				b.Run(p.name+"-reuse", p.reused)
			}
		})
	}
}
