package robby_test

// Benchmarks of robby's own overhead. Each robby benchmark is paired, in the
// same run, with a baseline that does the same work with raw openai-go calls
// and hand-written tool dispatch against the same in-process fake server, so
// the ratio of the two shows what robby adds. See docs/BENCHMARKS.md.
//
// The fake server answers from bytes computed once: each reply is captured
// from a robbytest server (so the wire format is robbytest's, byte for byte)
// and then served by a small handler that picks the reply by the number of
// messages in the request. robbytest's own queue is not used in the timed
// loops: it would need refilling and parses every request.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
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
)

const (
	benchModel  = "m"
	benchPrompt = "What is (1 + 2) + 3 * 4?"
	benchAnswer = "(1 + 2) + 3 * 4 = 15."

	benchStreamChunks = 5000 // content chunks of the first streamed turn
	benchStreamAnswer = "The sum is 3."
	benchSlowTools    = 8
	benchSlowToolTime = 50 * time.Millisecond
)

// The tools of the conversations: the same Go functions serve robby (through
// robby.NewTool) and the baselines (through benchRawTool).

type benchArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

func benchAdd(_ context.Context, in benchArgs) (int, error) { return in.A + in.B, nil }
func benchMul(_ context.Context, in benchArgs) (int, error) { return in.A * in.B, nil }

func benchRobbyTools() []robby.Tool {
	return []robby.Tool{
		robby.NewTool("add", "Adds two integers.", benchAdd),
		robby.NewTool("mul", "Multiplies two integers.", benchMul),
	}
}

// benchRawToolParams are the tool definitions of the baselines: JSON Schema
// maps written by hand, the same as robby infers for benchArgs (checked by
// TestBenchBaselinesSendWhatRobbySends).
func benchRawToolParams() []openai.ChatCompletionToolUnionParam {
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

// benchRawTool is the hand-written glue of a baseline: decode the arguments
// with encoding/json, call the function, encode its result.
func benchRawTool[In, Out any](fn func(context.Context, In) (Out, error)) func(context.Context, string) (string, error) {
	return func(ctx context.Context, args string) (string, error) {
		var in In
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

var benchRawDispatch = map[string]func(context.Context, string) (string, error){
	"add": benchRawTool(benchAdd),
	"mul": benchRawTool(benchMul),
}

func benchDispatch(ctx context.Context, name, args string) string {
	fn := benchRawDispatch[name]
	if fn == nil {
		return "Error: unknown tool " + name
	}
	out, err := fn(ctx, args)
	if err != nil {
		return "Error: " + err.Error()
	}
	return out
}

// benchHTTPClient is the baseline's long-lived HTTP client, built as robby
// builds its shared default one, so that both sides reuse connections alike.
var benchHTTPClient = sync.OnceValue(func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = 10 * time.Minute
	return &http.Client{Transport: t}
})

func benchRawClient(url string) openai.Client {
	return openai.NewClient(
		option.WithHTTPClient(benchHTTPClient()),
		option.WithBaseURL(url),
		option.WithAPIKey(""),
	)
}

// benchCapture returns the bodies a robbytest server sends for replies, one
// request each, streamed or not, as robby's requests ask (with usage).
func benchCapture(tb testing.TB, stream bool, replies ...robbytest.Reply) [][]byte {
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

// A benchServer answers each request with a precomputed body chosen by the
// number of messages the request holds, so that a conversation can be
// replayed any number of times without refilling anything.
type benchServer struct {
	*httptest.Server
	URL         string // base URL for the clients, ending in /v1
	contentType string
	byMessages  map[int][]byte
	bufs        sync.Pool

	mu       sync.Mutex
	record   bool
	requests [][]byte
}

var benchRole = []byte(`"role":`)

func newBenchServer(tb testing.TB, stream bool, byMessages map[int][]byte) *benchServer {
	s := &benchServer{contentType: "application/json", byMessages: byMessages}
	if stream {
		s.contentType = "text/event-stream"
	}
	s.bufs.New = func() any { return new(bytes.Buffer) }
	s.Server = httptest.NewServer(s)
	s.URL = s.Server.URL + "/v1"
	tb.Cleanup(s.Close)
	return s
}

func (s *benchServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	buf := s.bufs.Get().(*bytes.Buffer)
	defer s.bufs.Put(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n := bytes.Count(buf.Bytes(), benchRole)
	s.mu.Lock()
	if s.record {
		s.requests = append(s.requests, bytes.Clone(buf.Bytes()))
	}
	s.mu.Unlock()
	body, ok := s.byMessages[n]
	if !ok {
		http.Error(w, fmt.Sprintf("bench server: no reply for a request of %d messages", n), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", s.contentType)
	w.Write(body)
}

// recorded runs fn with the request bodies recorded and returns them.
func (s *benchServer) recorded(fn func()) [][]byte {
	s.mu.Lock()
	s.record, s.requests = true, nil
	s.mu.Unlock()
	fn()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record = false
	return s.requests
}

// --- 1. A three-turn conversation, not streamed ---

// newRun3Server serves: turn 1 (1 message) two parallel calls; turn 2
// (user, assistant, 2 tools = 4 messages) one call; turn 3 (6 messages) the
// answer.
func newRun3Server(tb testing.TB) *benchServer {
	call := func(id, name, args string) robbytest.ToolCall {
		c := robbytest.Call(name, args)
		c.ID = id
		return c
	}
	bodies := benchCapture(tb, false,
		robbytest.ToolCalls(call("call_1", "add", `{"a":1,"b":2}`), call("call_2", "mul", `{"a":3,"b":4}`)),
		robbytest.ToolCalls(call("call_3", "add", `{"a":3,"b":12}`)),
		robbytest.Text(benchAnswer),
	)
	return newBenchServer(tb, false, map[int][]byte{1: bodies[0], 4: bodies[1], 6: bodies[2]})
}

func newRun3Agent(tb testing.TB, url string, tools []robby.Tool, opts ...robby.Option) *robby.Agent {
	a, err := robby.New(append([]robby.Option{robby.WithBaseURL(url), robby.WithAPIKey(""), robby.WithModel(benchModel),
		robby.WithTools(tools...)}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

func robbyRun3(tb testing.TB, ctx context.Context, a *robby.Agent) {
	res, err := a.Run(ctx, benchPrompt)
	if err != nil {
		tb.Fatal(err)
	}
	if res.Text != benchAnswer || res.Turns != 3 || len(res.ToolCalls) != 3 {
		tb.Fatalf("robby: got %q in %d turns with %d calls", res.Text, res.Turns, len(res.ToolCalls))
	}
}

// rawRun3 is the baseline ReAct loop: request, dispatch every call by name,
// append the assistant message and the tool messages, until an answer.
func rawRun3(tb testing.TB, ctx context.Context, client *openai.Client, tools []openai.ChatCompletionToolUnionParam) {
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(benchPrompt)}
	for turn := 1; ; turn++ {
		if turn > robby.DefaultMaxTurns {
			tb.Fatal("openai-go: too many turns")
		}
		res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: benchModel, Messages: msgs, Tools: tools,
		})
		if err != nil {
			tb.Fatal(err)
		}
		if len(res.Choices) == 0 {
			tb.Fatal("openai-go: no choices")
		}
		msg := res.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			if msg.Content != benchAnswer || turn != 3 {
				tb.Fatalf("openai-go: got %q in %d turns", msg.Content, turn)
			}
			return
		}
		msgs = append(msgs, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			msgs = append(msgs, openai.ToolMessage(benchDispatch(ctx, tc.Function.Name, tc.Function.Arguments), tc.ID))
		}
	}
}

func BenchmarkRun3Turns(b *testing.B) {
	ctx := context.Background()
	srv := newRun3Server(b)
	tools := benchRobbyTools()

	b.Run("robby", func(b *testing.B) {
		a := newRun3Agent(b, srv.URL, tools)
		b.ReportAllocs()
		for b.Loop() {
			a.Reset()
			robbyRun3(b, ctx, a)
		}
	})
	b.Run("robby-budget", func(b *testing.B) { // a budget and prices: what they cost a run
		a := newRun3Agent(b, srv.URL, tools, robby.WithPrices(map[string]robby.Price{benchModel: {Input: 2, Output: 8}}),
			robby.WithBudget(robby.Budget{ModelCalls: 100, Tokens: 1 << 40, Cost: 1e9}))
		b.ReportAllocs()
		for b.Loop() {
			a.Reset()
			robbyRun3(b, ctx, a)
		}
	})
	b.Run("robby-new-agent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			robbyRun3(b, ctx, newRun3Agent(b, srv.URL, tools))
		}
	})
	b.Run("openai-go", func(b *testing.B) {
		client := benchRawClient(srv.URL)
		params := benchRawToolParams()
		b.ReportAllocs()
		for b.Loop() {
			rawRun3(b, ctx, &client, params)
		}
	})
}

// --- 2. A streamed turn of 5,000 chunks and a tool call, then an answer ---

// newStream5000Server serves: turn 1 (1 message) 5,000 content chunks and a
// call of add; turn 2 (user, assistant, tool = 3 messages) a short answer.
// It returns the number of SSE events the two replies hold.
func newStream5000Server(tb testing.TB) (*benchServer, int) {
	words := make([]string, benchStreamChunks)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	call := robbytest.Call("add", `{"a":1,"b":2}`)
	call.ID = "call_1"
	bodies := benchCapture(tb, true,
		robbytest.ToolCalls(call).WithText(strings.Join(words, " ")),
		robbytest.Text(benchStreamAnswer),
	)
	events := bytes.Count(bodies[0], []byte("data: ")) + bytes.Count(bodies[1], []byte("data: "))
	return newBenchServer(tb, true, map[int][]byte{1: bodies[0], 3: bodies[1]}), events
}

// benchStreamDeltas is how many text deltas a run yields: the 5,000 chunks
// and the words of the answer.
var benchStreamDeltas = benchStreamChunks + len(strings.Fields(benchStreamAnswer))

func robbyStream5000(tb testing.TB, ctx context.Context, a *robby.Agent) {
	deltas, size, calls := 0, 0, 0
	var text string
	for ev, err := range a.Stream(ctx, benchPrompt) {
		if err != nil {
			tb.Fatal(err)
		}
		switch ev.Kind {
		case robby.EventText:
			deltas++
			size += len(ev.Delta)
		case robby.EventToolResult:
			if ev.ToolResult.Err != nil || ev.ToolResult.Output != "3" {
				tb.Fatalf("robby: tool result %q, %v", ev.ToolResult.Output, ev.ToolResult.Err)
			}
			calls++
		case robby.EventDone:
			text = ev.Result.Text
		}
	}
	if text != benchStreamAnswer || deltas != benchStreamDeltas || calls != 1 || size == 0 {
		tb.Fatalf("robby: got %q in %d deltas with %d calls", text, deltas, calls)
	}
}

// rawStreamTurn streams one turn with an accumulator, reading every delta.
func rawStreamTurn(tb testing.TB, ctx context.Context, client *openai.Client, msgs []openai.ChatCompletionMessageParamUnion, tools []openai.ChatCompletionToolUnionParam) (msg openai.ChatCompletionMessage, deltas, size int) {
	s := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: benchModel, Messages: msgs, Tools: tools,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	defer s.Close()
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		chunk := s.Current()
		if !acc.AddChunk(chunk) {
			tb.Fatal("openai-go: chunk rejected by the accumulator")
		}
		if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			deltas++
			size += len(chunk.Choices[0].Delta.Content)
		}
	}
	if err := s.Err(); err != nil {
		tb.Fatal(err)
	}
	if len(acc.Choices) == 0 || acc.Choices[0].FinishReason == "" {
		tb.Fatal("openai-go: incomplete stream")
	}
	return acc.Choices[0].Message, deltas, size
}

func rawStream5000(tb testing.TB, ctx context.Context, client *openai.Client, tools []openai.ChatCompletionToolUnionParam) {
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(benchPrompt)}
	deltas, size, calls := 0, 0, 0
	for turn := 1; ; turn++ {
		if turn > robby.DefaultMaxTurns {
			tb.Fatal("openai-go: too many turns")
		}
		msg, d, n := rawStreamTurn(tb, ctx, client, msgs, tools)
		deltas, size = deltas+d, size+n
		if len(msg.ToolCalls) == 0 {
			if msg.Content != benchStreamAnswer || deltas != benchStreamDeltas || calls != 1 || size == 0 {
				tb.Fatalf("openai-go: got %q in %d deltas with %d calls", msg.Content, deltas, calls)
			}
			return
		}
		msgs = append(msgs, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			out := benchDispatch(ctx, tc.Function.Name, tc.Function.Arguments)
			if out != "3" {
				tb.Fatalf("openai-go: tool result %q", out)
			}
			calls++
			msgs = append(msgs, openai.ToolMessage(out, tc.ID))
		}
	}
}

func BenchmarkStream5000(b *testing.B) {
	ctx := context.Background()
	srv, events := newStream5000Server(b)
	perChunk := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(events), "ns/chunk")
	}

	b.Run("robby", func(b *testing.B) {
		a := newRun3Agent(b, srv.URL, benchRobbyTools())
		b.ReportAllocs()
		for b.Loop() {
			a.Reset()
			robbyStream5000(b, ctx, a)
		}
		perChunk(b)
	})
	b.Run("openai-go", func(b *testing.B) {
		client := benchRawClient(srv.URL)
		params := benchRawToolParams()
		b.ReportAllocs()
		for b.Loop() {
			rawStream5000(b, ctx, &client, params)
		}
		perChunk(b)
	})
}

// --- 3. Eight slow tools in one turn ---

// benchSpan records the wall time from the first tool's start to the last
// tool's end.
type benchSpan struct{ first, last atomic.Int64 }

func (s *benchSpan) reset() { s.first.Store(0); s.last.Store(0) }

func (s *benchSpan) add(start, end time.Time) {
	for v := start.UnixNano(); ; {
		old := s.first.Load()
		if old != 0 && old <= v || s.first.CompareAndSwap(old, v) {
			break
		}
	}
	for v := end.UnixNano(); ; {
		old := s.last.Load()
		if old >= v || s.last.CompareAndSwap(old, v) {
			break
		}
	}
}

func (s *benchSpan) duration() time.Duration {
	return time.Duration(s.last.Load() - s.first.Load())
}

// newSlowToolsAgent returns an agent with eight tools that each take 50 ms,
// and a server whose model calls all eight in one turn, then answers.
func newSlowToolsAgent(tb testing.TB, span *benchSpan) *robby.Agent {
	var (
		tools []robby.Tool
		calls []robbytest.ToolCall
	)
	for i := range benchSlowTools {
		name := fmt.Sprintf("slow_%d", i)
		tools = append(tools, robby.NewTool(name, "Takes 50 ms.", func(ctx context.Context, _ struct{}) (string, error) {
			start := time.Now()
			t := time.NewTimer(benchSlowToolTime)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return "", context.Cause(ctx)
			}
			span.add(start, time.Now())
			return "done", nil
		}))
		c := robbytest.Call(name, `{}`)
		c.ID = fmt.Sprintf("call_%d", i)
		calls = append(calls, c)
	}
	bodies := benchCapture(tb, false, robbytest.ToolCalls(calls...), robbytest.Text("All done."))
	srv := newBenchServer(tb, false, map[int][]byte{1: bodies[0], 2 + benchSlowTools: bodies[1]})
	a, err := robby.New(robby.WithBaseURL(srv.URL), robby.WithAPIKey(""), robby.WithModel(benchModel),
		robby.WithTools(tools...), robby.WithMaxToolCallsPerTurn(benchSlowTools))
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

func runSlowTools(tb testing.TB, ctx context.Context, a *robby.Agent) {
	a.Reset()
	res, err := a.Run(ctx, "Run all the slow tools.")
	if err != nil {
		tb.Fatal(err)
	}
	if res.Text != "All done." || len(res.ToolCalls) != benchSlowTools {
		tb.Fatalf("got %q with %d calls", res.Text, len(res.ToolCalls))
	}
	for _, r := range res.ToolCalls {
		if r.Err != nil {
			tb.Fatalf("%s: %v", r.Call.Name, r.Err)
		}
	}
}

func BenchmarkParallelTools(b *testing.B) {
	ctx := context.Background()
	var span benchSpan
	a := newSlowToolsAgent(b, &span)
	var tools time.Duration
	for b.Loop() {
		span.reset()
		runSlowTools(b, ctx, a)
		tools += span.duration()
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/run")
	b.ReportMetric(float64(tools.Milliseconds())/float64(b.N), "tools-ms/run")
}

// TestEightSlowToolsRunConcurrently checks that the eight 50 ms tools of one
// turn run concurrently: run one after the other they would take 400 ms.
func TestEightSlowToolsRunConcurrently(t *testing.T) {
	ctx := t.Context()
	var span benchSpan
	a := newSlowToolsAgent(t, &span)
	start := time.Now()
	runSlowTools(t, ctx, a)
	run := time.Since(start)
	tools := span.duration()
	t.Logf("eight 50 ms tools took %v, the whole run %v", tools, run)
	if tools >= 100*time.Millisecond {
		t.Errorf("the turn's tools took %v of wall time, want < 100ms (sequential would be %v)",
			tools, benchSlowTools*benchSlowToolTime)
	}
}

// TestBenchBaselinesSendWhatRobbySends checks that the baselines of the
// benchmarks do the same work as robby: the same requests, as JSON (robby
// orders the members of the request object its own way).
func TestBenchBaselinesSendWhatRobbySends(t *testing.T) {
	ctx := t.Context()
	check := func(t *testing.T, srv *benchServer, viaRobby, viaRaw func()) {
		want := srv.recorded(viaRobby)
		got := srv.recorded(viaRaw)
		if len(got) != len(want) {
			t.Fatalf("baseline sent %d requests, robby %d", len(got), len(want))
		}
		for i := range want {
			if !jsonEqual(got[i], want[i]) {
				t.Errorf("request %d differs:\nbaseline: %s\nrobby:    %s", i+1, clipBench(got[i]), clipBench(want[i]))
			}
		}
	}
	t.Run("Run3Turns", func(t *testing.T) {
		srv := newRun3Server(t)
		a := newRun3Agent(t, srv.URL, benchRobbyTools())
		client := benchRawClient(srv.URL)
		check(t, srv, func() { robbyRun3(t, ctx, a) }, func() { rawRun3(t, ctx, &client, benchRawToolParams()) })
	})
	t.Run("Stream5000", func(t *testing.T) {
		srv, _ := newStream5000Server(t)
		a := newRun3Agent(t, srv.URL, benchRobbyTools())
		client := benchRawClient(srv.URL)
		check(t, srv, func() { robbyStream5000(t, ctx, a) }, func() { rawStream5000(t, ctx, &client, benchRawToolParams()) })
	})
}

func jsonEqual(a, b []byte) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && reflect.DeepEqual(va, vb)
}

func clipBench(b []byte) string {
	const limit = 600
	if len(b) > limit {
		return string(b[:limit/2]) + " … " + string(b[len(b)-limit/2:])
	}
	return string(b)
}
