package robby

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/robby-go/robby/internal/chatwire"

	"github.com/robby-go/robby/internal/jsonstream"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// The transcripts under testdata/sse are provider streams in each provider's
// own wire format (as openai-go-notes.md, section 3, records it). Each is
// replayed byte for byte by robbytest, in 64-byte writes, through
// Agent.Stream. That is the only path, with ChatCompletionStream, that
// sends streaming requests. The test checks what the assembler made of
// it: the events, what the tools received, the Result, and the assistant
// and tool messages of the next request.

// wantCall is a tool call a transcript must turn into.
type wantCall struct {
	id   string // "" when the provider sent none: robby must make one up
	name string
	args string // the arguments exactly as assembled
}

type transcriptCase struct {
	name string
	file string

	// Turn 1 as the events show it.
	text      string // the text deltas joined, also the assistant message's content
	reasoning string // the reasoning deltas joined
	calls     []wantCall
	usage     Usage // the turn's usage (zero when the provider sent none)

	// received lists "name canonical-arguments" for each tool run, in any
	// order; when nil it is derived from calls.
	received []string
	// extra maps a call's position to the extra_content (JSON) it must
	// carry in the next request; the other calls must carry none.
	extra map[int]string

	err    error  // the run fails with this (errors.Is)
	apiErr string // or with an *APIError sent in the stream, with this message
}

const geminiSignature = "CiQB0e2Kb7yT9xPz3W1vQm8NcR5sLd0Fh4Jg6Ua2Ek9Io1Yp7TrCmsBAdHtim9xk2vQ3sPz8Lw1RcN5bY7uJ0aMe4Fi6Gd9Hk2Ol=="

var transcriptCases = []transcriptCase{
	{
		name:  "OpenAI one call in fragments",
		file:  "openai_fragments.sse",
		calls: []wantCall{{"call_Qm7Xb2LkT9pRz4VnC8sYw1Ha", "get_weather", `{"city":"Paris","unit":"celsius"}`}},
		usage: Usage{PromptTokens: 84, CompletionTokens: 18, TotalTokens: 102},
	},
	{
		name: "OpenAI parallel calls one after another",
		file: "openai_parallel.sse",
		calls: []wantCall{
			{"call_3vHq8TnR1xWb5LmK9pZc2YdA", "get_weather", `{"city": "Paris"}`},
			{"call_Jf6sN0aQ4uGe7RkX2vTm9BwC", "get_weather", `{"city": "Tokyo"}`},
			{"call_Zp1dL8cV5nHy3QsW6tKj0MrE", "get_time", `{"timezone": "Asia/Tokyo"}`},
		},
		usage: Usage{PromptTokens: 118, CompletionTokens: 61, TotalTokens: 179},
	},
	{
		name: "parallel calls interleaved by index",
		file: "parallel_interleaved.sse",
		calls: []wantCall{
			{"call_Ab3De6Gh9Jk2Mn5Pq8St1Vw4", "get_weather", `{"city":"Paris","unit":"celsius"}`},
			{"call_Yz7Xc4Vb1Nm8Lk5Jh2Gf9Ds6", "get_weather", `{"city":"Tokyo"}`},
			{"call_Qw2Er5Ty8Ui1Op4As7Df0Gh", "get_time", `{"timezone":"Asia/Tokyo"}`},
		},
		usage: Usage{PromptTokens: 131, CompletionTokens: 70, TotalTokens: 201},
	},
	{
		name:  "Ollama whole call in one chunk",
		file:  "ollama_whole_call.sse",
		calls: []wantCall{{"call_k3v9x2qa", "get_weather", `{"city":"Paris","unit":"celsius"}`}},
		usage: Usage{PromptTokens: 152, CompletionTokens: 24, TotalTokens: 176},
	},
	{
		name: "Ollama 0.20 parallel calls all at index 0",
		file: "ollama_parallel_index0.sse",
		calls: []wantCall{
			{"call_8f2kq1zm", "get_weather", `{"city":"Paris"}`},
			{"call_p0x7n3wd", "get_weather", `{"city":"Tokyo"}`},
			{"call_r5t1y9ub", "get_time", `{"timezone":"Asia/Tokyo"}`},
		},
		usage: Usage{PromptTokens: 210, CompletionTokens: 63, TotalTokens: 273},
	},
	{
		name: "calls without index (Ollama 0.4, finish stop)",
		file: "no_index.sse",
		calls: []wantCall{
			{"call_x1c0yq6f", "get_weather", `{"city":"Paris"}`},
			{"call_b7mz2k4e", "get_weather", `{"city":"Lyon"}`},
			{"call_u3wq8d1n", "get_time", `{"timezone":"Europe/Paris"}`},
		},
	},
	{
		name: "Gemini empty and missing ids",
		file: "gemini_missing_id.sse",
		calls: []wantCall{
			{"", "get_weather", `{"city":"Paris"}`},
			{"", "get_weather", `{"city":"Lyon"}`},
			{"", "get_time", `{"timezone":"Europe/Paris"}`},
		},
		usage: Usage{PromptTokens: 143, CompletionTokens: 38, TotalTokens: 181},
	},
	{
		name:  "Gemini finish_reason stop after a call",
		file:  "gemini_finish_stop.sse",
		calls: []wantCall{{"k7pq2xz9", "get_weather", `{"city":"Paris","unit":"celsius"}`}},
		usage: Usage{PromptTokens: 97, CompletionTokens: 21, TotalTokens: 118},
	},
	{
		name:  "usage in a last chunk without choices",
		file:  "usage_only_chunk.sse",
		text:  "Paris is the capital of France.",
		usage: Usage{PromptTokens: 19, CompletionTokens: 8, TotalTokens: 27},
	},
	{
		name:  "OpenRouter comments between events",
		file:  "openrouter_comments.sse",
		text:  "I'll look up the weather in Paris.",
		calls: []wantCall{{"toolu_01HmR8xV3qWc5NtK2pLz9YbF", "get_weather", `{"city": "Paris"}`}},
		usage: Usage{PromptTokens: 512, CompletionTokens: 64, TotalTokens: 576},
	},
	{
		name:   "OpenAI error object mid-stream",
		file:   "error_midstream.sse",
		text:   "The three largest cities are",
		apiErr: "The server had an error while processing your request. Sorry about that!",
	},
	{
		name:   "OpenRouter error chunk with finish_reason error",
		file:   "openrouter_error_midstream.sse",
		text:   "Here is the summary:",
		apiErr: "Provider disconnected unexpectedly",
	},
	{
		// Older llama.cpp writes the error as an "error:" SSE field, which
		// carries no data, then [DONE]: the reply must not pass for
		// complete.
		name: "llama.cpp error line then [DONE]",
		file: "llamacpp_error_line.sse",
		text: "Once upon a",
		err:  ErrIncompleteStream,
	},
	{
		name:     "UTF-8 characters and an escaped emoji split across fragments",
		file:     "utf8_split.sse",
		calls:    []wantCall{{"chatcmpl-tool-c18e4b27f9d3a065", "send_message", `{"text": "See you all at the Café in 日本 \ud83d\ude00 🎉!"}`}},
		received: []string{`send_message {"text":"See you all at the Café in 日本 😀 🎉!"}`},
		usage:    Usage{PromptTokens: 143, CompletionTokens: 29, TotalTokens: 172},
	},
	{
		name:  "arguments cut inside characters, each fragment invalid UTF-8",
		file:  "byte_split_utf8.sse",
		calls: []wantCall{{"call_b9Lr4Tq2Wx7Nz1Kc", "get_weather", `{"city":"Zürich","note":"東京 🌍"}`}},
		usage: Usage{PromptTokens: 96, CompletionTokens: 25, TotalTokens: 121},
	},
	{
		name:  "an escaped surrogate pair split between two fragments",
		file:  "surrogate_split.sse",
		calls: []wantCall{{"call_s7Pq3Xv8Ld2Mw5Jt", "get_weather", `{"city":"Zürich","note":"東京 🌍"}`}},
		usage: Usage{PromptTokens: 88, CompletionTokens: 32, TotalTokens: 120},
	},
	{
		name:     "empty arguments for a tool without parameters",
		file:     "empty_arguments.sse",
		calls:    []wantCall{{"call_Nw4Rk8Tz2Lp6Vc0Xb5Mh9Qd3", "list_files", `{}`}},
		received: []string{`list_files {}`},
		usage:    Usage{PromptTokens: 72, CompletionTokens: 11, TotalTokens: 83},
	},
	{
		name:     "Ollama null arguments",
		file:     "ollama_null_arguments.sse",
		calls:    []wantCall{{"call_w8e2r6t0", "list_files", `{}`}},
		received: []string{`list_files {}`},
		usage:    Usage{PromptTokens: 98, CompletionTokens: 12, TotalTokens: 110},
	},
	{
		name:  "text then a tool call in the same turn",
		file:  "text_then_tool.sse",
		text:  "Let me check the weather in Paris first.",
		calls: []wantCall{{"call_Ur5Ty1Io7Pa3Sd9Fg4Hj0Kl6", "get_weather", `{"city":"Paris"}`}},
		usage: Usage{PromptTokens: 96, CompletionTokens: 27, TotalTokens: 123},
	},
	{
		name:      "DeepSeek reasoning_content, keep-alive comments",
		file:      "reasoning_content.sse",
		text:      "17 × 23 = **391**.",
		reasoning: "The user asks for 17 × 23. 17 × 20 = 340, 17 × 3 = 51, total 391.",
		usage:     Usage{PromptTokens: 14, CompletionTokens: 61, TotalTokens: 75, ReasoningTokens: 49},
	},
	{
		name:      "Ollama reasoning field then a call",
		file:      "reasoning_field.sse",
		reasoning: "The user wants the weather in Paris. I should call get_weather.",
		calls:     []wantCall{{"call_h4n8v2c6", "get_weather", `{"city":"Paris"}`}},
		usage:     Usage{PromptTokens: 188, CompletionTokens: 41, TotalTokens: 229},
	},
	{
		name:  "llama.cpp content null",
		file:  "content_null.sse",
		text:  "Bonjour ! Comment puis-je vous aider ?",
		usage: Usage{PromptTokens: 12, CompletionTokens: 8, TotalTokens: 20},
	},
	{
		name: "connection closed inside a tool call",
		file: "closed_before_done.sse",
		text: "Checking now.",
		err:  ErrIncompleteStream,
	},
	{
		name: "Ollama swallowed error: EOF without finish",
		file: "ollama_swallowed_error.sse",
		text: "The answer is",
		err:  ErrIncompleteStream,
	},
	{
		name: "Gemini 3 thought signature",
		file: "gemini_thought_signature.sse",
		calls: []wantCall{
			{"function-call-15417296253186439207", "get_weather", `{"city":"Paris"}`},
			{"function-call-15417296253186439208", "get_time", `{"timezone":"Europe/Paris"}`},
		},
		extra: map[int]string{0: `{"google":{"thought_signature":"` + geminiSignature + `"}}`},
		usage: Usage{PromptTokens: 164, CompletionTokens: 52, TotalTokens: 216},
	},
	{
		name: "LM Studio new id on every fragment",
		file: "lmstudio_new_id_per_fragment.sse",
		calls: []wantCall{
			{"193629320", "get_weather", `{"city": "Paris"}`},
			{"771048265", "get_weather", `{"city": "Tokyo"}`},
		},
	},
	{
		name:      "vLLM final chunk repeats id, type and name with the last arguments",
		file:      "vllm_repeat_final.sse",
		reasoning: "Need the weather tool.",
		calls:     []wantCall{{"chatcmpl-tool-a4f19c2e7b3d5860", "get_weather", `{"city": "Paris", "unit": "celsius"}`}},
		usage:     Usage{PromptTokens: 301, CompletionTokens: 44, TotalTokens: 345},
	},
	{
		name: "vLLM final flush repeats the whole arguments after an incomplete prefix",
		file: "vllm_final_flush_whole.sse",
		calls: []wantCall{{"chatcmpl-tool-b7e0d2c94f1a3658", "record_expense",
			`{"date": "2026-01-02", "amount": 45, "fee_type": "停车费", "income_type": "支出"}`}},
	},
	{
		name:      "llama.cpp reasoning then a call",
		file:      "llamacpp_tool.sse",
		reasoning: "Okay, the user wants the weather in Paris.",
		calls:     []wantCall{{"Yk3VmQ8pTz1XcR6wNb4LhJ9sGd2Fa7Ue", "get_weather", `{"city":"Paris","unit":"celsius"}`}},
		usage:     Usage{PromptTokens: 212, CompletionTokens: 57, TotalTokens: 269},
	},
}

// failing reports whether the transcript must end the run with an error.
func (tc *transcriptCase) failing() bool { return tc.err != nil || tc.apiErr != "" }

func TestStreamTranscripts(t *testing.T) {
	for _, tc := range transcriptCases {
		t.Run(tc.name, func(t *testing.T) {
			srv := robbytest.NewServer()
			defer srv.Close()
			srv.Reply(robbytest.SSEFile(filepath.Join("testdata", "sse", tc.file)))
			runsTools := len(tc.calls) > 0 && !tc.failing()
			if runsTools {
				srv.Reply(robbytest.Text("All done."))
			}
			rec := new(toolRecorder)
			a := newTranscriptAgent(t, srv, rec.tools()...)

			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			got := collectEvents(t, a.Stream(ctx, "Go."))
			res, err := got.result, got.err
			require.NotNil(t, res)

			// The run's outcome.
			switch {
			case tc.err != nil:
				require.ErrorIs(t, err, tc.err)
			case tc.apiErr != "":
				var apiErr *APIError
				require.ErrorAs(t, err, &apiErr)
				assert.Equal(t, 0, apiErr.StatusCode, "an error inside a stream has no status")
				assert.Equal(t, tc.apiErr, apiErr.Message)
			default:
				require.NoError(t, err)
			}

			// Turn 1 as the events show it.
			assert.Equal(t, tc.text, got.text[1], "text deltas")
			assert.Equal(t, tc.reasoning, got.reasoning[1], "reasoning deltas")
			if tc.reasoning != "" {
				assert.NotContains(t, got.text[1], tc.reasoning, "reasoning mixed into the text")
			}

			if tc.failing() {
				// Nothing is run and nothing more is asked after a broken reply.
				assert.Empty(t, got.calls, "tool calls announced from an incomplete reply")
				assert.Empty(t, rec.received(), "tools run from an incomplete reply")
				assert.Empty(t, res.ToolCalls)
				assert.Equal(t, tc.text, res.Text, "Result.Text keeps the partial text")
				assert.Len(t, srv.Requests(), 1)
				return
			}

			assert.Equal(t, tc.usage, got.usage[1], "turn usage")
			var total Usage
			for _, u := range got.usage {
				total.add(u)
			}
			assert.Equal(t, total, res.Usage, "Result.Usage sums the turns")

			calls := got.calls[1]
			checkCalls(t, tc.calls, calls)
			checkArgumentFragments(t, got.args, calls)

			if !runsTools {
				assert.Equal(t, tc.text, res.Text)
				assert.Equal(t, tc.reasoning, res.Reasoning)
				assert.Equal(t, 1, res.Turns)
				require.Len(t, srv.Requests(), 1)
				checkConversationEnd(t, a, tc.text, tc.reasoning)
				return
			}

			// The tools ran, each with its own arguments.
			want := tc.received
			if want == nil {
				for _, c := range tc.calls {
					want = append(want, c.name+" "+canonicalJSON(t, c.args))
				}
			}
			assert.ElementsMatch(t, want, rec.received(), "arguments the tools received")
			require.Len(t, got.results, len(calls))
			for _, r := range got.results {
				assert.NoError(t, r.Err, "tool %s", r.Call.Name)
			}
			require.Len(t, res.ToolCalls, len(calls))
			for i, r := range res.ToolCalls {
				assert.Equal(t, calls[i], r.Call, "Result.ToolCalls[%d]", i)
			}
			assert.Equal(t, "All done.", res.Text)
			assert.Equal(t, 2, res.Turns)

			// The next request carries the assistant message and one tool
			// message per call, in order, with matching ids.
			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			assert.True(t, reqs[1].Stream)
			msgs := reqs[1].Messages
			require.Len(t, msgs, 2+len(calls), "user, assistant, one tool message per call")
			assert.Equal(t, "user", msgs[0].Role)
			asst := msgs[1]
			assert.Equal(t, "assistant", asst.Role)
			assert.Equal(t, tc.text, asst.Content, "assistant text")
			require.Len(t, asst.ToolCalls, len(calls))
			for i, c := range calls {
				sent := asst.ToolCalls[i]
				assert.Equal(t, c.ID, sent.ID, "tool_calls[%d].id", i)
				assert.Equal(t, c.Name, sent.Name, "tool_calls[%d].function.name", i)
				assert.Equal(t, c.Arguments, sent.Arguments, "tool_calls[%d].function.arguments", i)
				if x, ok := tc.extra[i]; ok {
					require.Contains(t, sent.Extra, "extra_content", "tool_calls[%d]", i)
					assert.JSONEq(t, x, string(sent.Extra["extra_content"]), "tool_calls[%d].extra_content", i)
				} else {
					assert.Empty(t, sent.Extra, "tool_calls[%d] carries no extra field", i)
				}
				tool := msgs[2+i]
				assert.Equal(t, "tool", tool.Role)
				assert.Equal(t, c.ID, tool.ToolCallID, "tool message %d answers call %d", i, i)
				assert.Equal(t, toolOutput(t, c.Name, c.Arguments), tool.Content, "tool message %d", i)
			}
			if tc.reasoning != "" {
				assert.NotContains(t, string(reqs[1].Body), tc.reasoning, "reasoning sent back to the provider")
			}
		})
	}
}

// TestStreamTranscriptsChatCompletionStream replays the transcripts that
// run no tool through ChatCompletionStream, the other streaming path.
func TestStreamTranscriptsChatCompletionStream(t *testing.T) {
	for _, tc := range transcriptCases {
		if len(tc.calls) > 0 {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			srv := robbytest.NewServer()
			defer srv.Close()
			srv.Reply(robbytest.SSEFile(filepath.Join("testdata", "sse", tc.file)))
			a := newTranscriptAgent(t, srv)
			a.AddMessages(openai.UserMessage("Go."))
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			var deltas []string
			text, err := a.ChatCompletionStream(ctx, func(d string) error {
				deltas = append(deltas, d)
				return nil
			})
			switch {
			case tc.err != nil:
				require.ErrorIs(t, err, tc.err)
			case tc.apiErr != "":
				var apiErr *APIError
				require.ErrorAs(t, err, &apiErr)
				assert.Equal(t, tc.apiErr, apiErr.Message)
			default:
				require.NoError(t, err)
				checkConversationEnd(t, a, tc.text, tc.reasoning)
			}
			assert.Equal(t, tc.text, text)
			assert.Equal(t, tc.text, strings.Join(deltas, ""))
			assert.NotContains(t, deltas, "")
		})
	}
}

// TestStreamTranscriptUTF8WritesSplitCharacters makes sure utf8_split.sse
// keeps its point. robbytest writes a transcript 64 bytes at a time. Some
// of those writes must end inside a multi-byte character, so the SSE
// reader gets characters split at the byte level too.
func TestStreamTranscriptUTF8WritesSplitCharacters(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "sse", "utf8_split.sse"))
	require.NoError(t, err)
	var split []string
	for i := 64; i < len(b); i += 64 {
		if !utf8.RuneStart(b[i]) {
			start := i
			for start > 0 && !utf8.RuneStart(b[start]) {
				start--
			}
			r, _ := utf8.DecodeRune(b[start:])
			split = append(split, string(r))
		}
	}
	assert.NotEmpty(t, split, "no 64-byte write ends inside a character")
	t.Logf("characters split between writes: %q", split)
}

// checkCalls compares the calls a turn announced with those wanted: ids as
// sent, or made up, non-empty and unique, when the provider sent none.
func checkCalls(t *testing.T, want []wantCall, got []ToolCall) {
	t.Helper()
	require.Len(t, got, len(want), "tool calls: %+v", got)
	ids := make(map[string]bool)
	for i, w := range want {
		c := got[i]
		if w.id != "" {
			assert.Equal(t, w.id, c.ID, "call %d id", i)
		} else {
			assert.NotEmpty(t, c.ID, "call %d: robby must make up an id", i)
		}
		assert.False(t, ids[c.ID], "call %d: id %q used twice", i, c.ID)
		ids[c.ID] = true
		assert.Equal(t, w.name, c.Name, "call %d name", i)
		assert.Equal(t, w.args, c.Arguments, "call %d arguments", i)
	}
}

// checkConversationEnd checks that the conversation ends with the answer,
// its reasoning left out.
func checkConversationEnd(t *testing.T, a *Agent, text, reasoning string) {
	t.Helper()
	msgs := a.Messages()
	require.NotEmpty(t, msgs)
	last := msgs[len(msgs)-1]
	require.NotNil(t, last.OfAssistant, "the conversation ends with the answer")
	assert.Equal(t, text, last.OfAssistant.Content.OfString.Value)
	b, err := json.Marshal(msgs)
	require.NoError(t, err)
	if reasoning != "" {
		assert.NotContains(t, string(b), reasoning, "reasoning kept in the conversation")
	}
	assert.NotContains(t, string(b), "reasoning")
}

// streamed is what a Stream produced, per turn.
type streamed struct {
	text      map[int]string
	reasoning map[int]string
	calls     map[int][]ToolCall
	results   []*ToolResult
	usage     map[int]Usage
	args      map[string]string // the argument fragments of each call, joined
	result    *Result
	err       error
}

func collectEvents(t *testing.T, events iter.Seq2[Event, error]) *streamed {
	t.Helper()
	s := &streamed{text: map[int]string{}, reasoning: map[int]string{}, calls: map[int][]ToolCall{}, usage: map[int]Usage{}, args: map[string]string{}}
	done := 0
	for e, err := range events {
		require.Zero(t, done, "an event after EventDone: %v", e.Kind)
		if e.Kind != EventDone {
			require.NoError(t, err, "only EventDone carries an error")
		}
		switch e.Kind {
		case EventText:
			assert.NotEmpty(t, e.Delta, "empty text delta")
			s.text[e.Turn] += e.Delta
		case EventReasoning:
			assert.NotEmpty(t, e.Delta, "empty reasoning delta")
			s.reasoning[e.Turn] += e.Delta
		case EventToolCallDelta:
			assert.NotEmpty(t, e.Delta, "empty argument fragment")
			require.NotEmpty(t, e.ToolCall.ID, "a fragment of no call")
			assert.Empty(t, e.ToolCall.Arguments)
			s.args[e.ToolCall.ID] += e.Delta
		case EventToolCall:
			require.NotNil(t, e.ToolCall)
			s.calls[e.Turn] = append(s.calls[e.Turn], *e.ToolCall)
		case EventToolResult:
			require.NotNil(t, e.ToolResult)
			s.results = append(s.results, e.ToolResult)
		case EventTurnEnd:
			require.NotNil(t, e.Usage)
			s.usage[e.Turn] = *e.Usage
		case EventDone:
			done++
			s.result, s.err = e.Result, err
		}
	}
	require.Equal(t, 1, done, "exactly one EventDone")
	return s
}

// toolRecorder gives the tools of the transcripts, which record the
// arguments they receive.
type toolRecorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *toolRecorder) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func (r *toolRecorder) record(name string, args any) string {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	r.mu.Lock()
	r.calls = append(r.calls, name+" "+string(b))
	r.mu.Unlock()
	return name + " -> " + string(b)
}

type sendMessageArgs struct {
	Text string `json:"text" jsonschema:"the message"`
}

func (r *toolRecorder) tools() []Tool {
	str := map[string]any{"type": "string"}
	schema := func(props map[string]any, required ...string) map[string]any {
		return map[string]any{"type": "object", "properties": props, "required": required}
	}
	untyped := func(name string) func(context.Context, map[string]any) (any, error) {
		return func(_ context.Context, args map[string]any) (any, error) {
			return r.record(name, args), nil
		}
	}
	return []Tool{
		FuncTool("get_weather", "Current weather in a city.", schema(map[string]any{
			"city": str,
			"unit": map[string]any{"type": "string", "enum": []any{"celsius", "fahrenheit"}},
		}, "city"), untyped("get_weather")),
		FuncTool("get_time", "Current time in a time zone.", schema(map[string]any{"timezone": str}, "timezone"), untyped("get_time")),
		FuncTool("list_files", "Files in the working directory.", nil, untyped("list_files")),
		FuncTool("record_expense", "Records an expense.", schema(map[string]any{
			"date": str, "amount": map[string]any{"type": "number"}, "fee_type": str, "income_type": str,
		}, "date", "amount"), untyped("record_expense")),
		NewTool("send_message", "Sends a message.", func(_ context.Context, in sendMessageArgs) (string, error) {
			return r.record("send_message", in), nil
		}),
	}
}

// toolOutput is what the recording tools answer to a call.
func toolOutput(t *testing.T, name, args string) string {
	return name + " -> " + canonicalJSON(t, args)
}

// canonicalJSON re-encodes a JSON object as the tools see it.
func canonicalJSON(t *testing.T, s string) string {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &v), "arguments %q", s)
	if v == nil {
		v = map[string]any{}
	}
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func newTranscriptAgent(t *testing.T, srv *robbytest.Server, tools ...Tool) *Agent {
	t.Helper()
	a, err := New(WithBaseURL(srv.URL), WithAPIKey(""), WithModel("transcript-model"), WithTools(tools...),
		WithRequestOptions(option.WithMaxRetries(0)))
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	return a
}

// The assembler itself, fed with chunks decoded as the streaming loop decodes them,
// for orderings that are awkward to write as a whole transcript.

// assemble folds chunks into a reply; each is a chunk's JSON, or only a
// delta's, which is wrapped in a chunk.
func assemble(t *testing.T, chunks ...string) (r *reply, text, reasoning string) {
	t.Helper()
	r = new(reply)
	for _, raw := range chunks {
		if !strings.Contains(raw, `"object":"chat.completion.chunk"`) {
			raw = `{"id":"chatcmpl-unit","object":"chat.completion.chunk","created":1767225600,"model":"m","choices":[{"index":0,"delta":` +
				raw + `,"finish_reason":null}]}`
		}
		var c chatwire.Response
		require.NoError(t, chatwire.DecodeChunk(ssestream.Event{Data: []byte(raw)}, &c), "chunk %s", raw)
		dt, dr := r.addChunk(&c)
		text += dt
		reasoning += dr
	}
	return r, text, reasoning
}

// callsOf returns the calls of r as toolCalls gives them, made-up ids aside.
func callsOf(r *reply) []ToolCall {
	calls := r.toolCalls()
	for i := range calls {
		if calls[i].ID != r.calls[i].id {
			calls[i].ID = "<new>"
		}
	}
	return calls
}

func TestAssemblerGeminiIndexlessFragments(t *testing.T) {
	// Gemini may split a call's arguments over deltas that have neither
	// index nor id, then start a second call of the same function.
	r, _, _ := assemble(t,
		`{"tool_calls":[{"function":{"arguments":"{\"city\":","name":"get_weather"},"id":"fc-1","type":"function"}]}`,
		`{"tool_calls":[{"function":{"arguments":"\"Paris\"}"}}]}`,
		`{"tool_calls":[{"function":{"arguments":"{\"city\":\"Lyon\"}","name":"get_weather"},"id":"fc-2","type":"function"}]}`,
		`{"tool_calls":[{"function":{"arguments":"{\"city\":\"Nice\"}","name":"get_weather"},"type":"function"}]}`,
	)
	assert.Equal(t, []ToolCall{
		{ID: "fc-1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
		{ID: "fc-2", Name: "get_weather", Arguments: `{"city":"Lyon"}`},
		{ID: "<new>", Name: "get_weather", Arguments: `{"city":"Nice"}`},
	}, callsOf(r))
}

func TestAssemblerGeminiSignatureOnlyDelta(t *testing.T) {
	// A delta carrying only the thought signature belongs to the call
	// before it, and goes back with it.
	sig := `{"google":{"thought_signature":"EjQKMgEMOdbH"}}`
	r, _, _ := assemble(t,
		`{"role":"assistant","tool_calls":[{"function":{"arguments":"{\"city\":\"Paris\"}","name":"get_weather"},"id":"fc-1","type":"function"}]}`,
		`{"tool_calls":[{"extra_content":`+sig+`}]}`,
	)
	calls := r.toolCalls()
	require.Equal(t, []ToolCall{{ID: "fc-1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}, calls)

	m, raw := r.message(calls)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.JSONEq(t, string(b), string(raw), "robby's JSON of the message is not openai-go's")
	var msg struct {
		ToolCalls []struct {
			ID           string          `json:"id"`
			ExtraContent json.RawMessage `json:"extra_content"`
		} `json:"tool_calls"`
	}
	require.NoError(t, json.Unmarshal(b, &msg), "%s", b)
	require.Len(t, msg.ToolCalls, 1)
	assert.JSONEq(t, sig, string(msg.ToolCalls[0].ExtraContent))
}

func TestAssemblerReasoningFields(t *testing.T) {
	// A delta with both fields (a server between the two names) counts
	// once; a null reasoning_content does not hide reasoning.
	r, text, reasoning := assemble(t,
		`{"role":"assistant","content":null,"reasoning_content":"Think","reasoning":"Think"}`,
		`{"content":null,"reasoning_content":null,"reasoning":"ing."}`,
		`{"content":"Done.","reasoning_content":null,"reasoning":null}`,
	)
	assert.Equal(t, "Thinking.", reasoning)
	assert.Equal(t, "Thinking.", r.reasoning.String())
	assert.Equal(t, "Done.", text)
	assert.Equal(t, "Done.", r.text.String())
}

func TestAssemblerUsage(t *testing.T) {
	// Azure's prompt-filter chunk (no choices, no usage) changes nothing; a
	// usage sent twice is the total once, not twice.
	usage := `{"id":"chatcmpl-u","object":"chat.completion.chunk","created":1,"model":"m","choices":[],` +
		`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`
	r, text, _ := assemble(t,
		`{"id":"","object":"chat.completion.chunk","created":0,"model":"","choices":[],"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}`,
		`{"role":"assistant","content":"Hi"}`,
		usage, usage,
	)
	assert.Equal(t, "Hi", text)
	assert.Equal(t, Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}, r.usage)
}

func TestAssemblerRepeatedWholeArguments(t *testing.T) {
	// vLLM's final flush may send the whole arguments again. It comes
	// after the complete arguments (vllm#39615, xlam #51697), or after a
	// prefix of them (vllm#42167; xlam's "{" then the whole object).
	for _, tc := range []struct {
		name   string
		prefix []string
	}{
		{"after the whole", []string{`{\"city\": `, `\"Paris\"}`}},
		{"after an opening brace", []string{`{`}},
		{"after all but the closing brace", []string{`{\"city\": `, `\"Paris\"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chunks := []string{`{"tool_calls":[{"id":"chatcmpl-tool-1","type":"function","index":0,"function":{"name":"get_weather","arguments":null}}]}`}
			for _, p := range tc.prefix {
				chunks = append(chunks, `{"tool_calls":[{"index":0,"function":{"arguments":"`+p+`"}}]}`)
			}
			chunks = append(chunks, `{"tool_calls":[{"id":null,"type":null,"index":0,"function":{"name":null,"arguments":"{\"city\": \"Paris\"}"}}]}`)
			r, _, _ := assemble(t, chunks...)
			assert.Equal(t, []ToolCall{{ID: "chatcmpl-tool-1", Name: "get_weather", Arguments: `{"city": "Paris"}`}}, callsOf(r))
		})
	}
}

func TestAssemblerSharedIDAndIndex(t *testing.T) {
	// Some OpenRouter upstreams give every parallel call the same index
	// and id (hass_local_openai_llm#92). Each call must stay whole, and the
	// id must be made unique for the tool messages.
	t.Run("different functions", func(t *testing.T) {
		r, _, _ := assemble(t,
			`{"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`,
			`{"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"get_time","arguments":"{\"timezone\":\"Europe/Paris\"}"}}]}`,
		)
		assert.Equal(t, []ToolCall{
			{ID: "call_0", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			{ID: "<new>", Name: "get_time", Arguments: `{"timezone":"Europe/Paris"}`},
		}, callsOf(r))
	})
	t.Run("same function", func(t *testing.T) {
		r, _, _ := assemble(t,
			`{"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`,
			`{"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Tokyo\"}"}}]}`,
		)
		assert.Equal(t, []ToolCall{
			{ID: "call_0", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			{ID: "<new>", Name: "get_weather", Arguments: `{"city":"Tokyo"}`},
		}, callsOf(r))
	})
}

func TestAssemblerFinishStopKeepsCalls(t *testing.T) {
	// The finish reason does not decide whether calls are run: a call
	// finished with "stop" (Gemini, gpt-4o once) is still a call.
	r, _, _ := assemble(t,
		`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"delta":{"role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"list_files"},"id":"a1","type":"function"}]},"finish_reason":"stop","index":0}]}`,
	)
	assert.Equal(t, "stop", r.finish)
	assert.Equal(t, []ToolCall{{ID: "a1", Name: "list_files", Arguments: "{}"}}, r.toolCalls())
}

func TestAssemblerEmptyDeltasAddNothing(t *testing.T) {
	// Empty tool_calls arrays, content "" and null, and role-only deltas
	// produce neither text nor calls.
	r, text, reasoning := assemble(t,
		`{"role":"assistant","content":null}`,
		`{"role":"assistant","content":"","tool_calls":[]}`,
		`{}`,
	)
	assert.Empty(t, text)
	assert.Empty(t, reasoning)
	assert.Empty(t, r.toolCalls())
	assert.Empty(t, r.finish)
}

func TestAssemblerReadsFieldNamesExactly(t *testing.T) {
	// "ID" and "Function" are not the API's fields: they are the
	// provider's own, kept and sent back, and the call's own fields win.
	r, _, _ := assemble(t,
		`{"tool_calls":[{"index":0,"id":"call_1","ID":"other","type":"function","function":{"name":"f","arguments":"{}"},"Function":{"name":"g"}}]}`,
	)
	calls := r.toolCalls()
	require.Equal(t, []ToolCall{{ID: "call_1", Name: "f", Arguments: "{}"}}, calls)
	_, raw := r.message(calls)
	assert.Contains(t, string(raw), `"ID":"other"`)
	assert.Contains(t, string(raw), `"Function":{"name":"g"}`)
}

// TestPlainTranscripts replays plain (not streamed) responses under
// testdata/plain through Run. They hold the same arguments as
// byte_split_utf8.sse and surrogate_split.sse, whole, as raw UTF-8 and as
// escapes with a surrogate pair. They must reach the tool and the next
// request unchanged.
func TestPlainTranscripts(t *testing.T) {
	const want = `{"city":"Zürich","note":"東京 🌍"}`
	for _, file := range []string{"raw_utf8.json", "escaped_surrogate_pair.json"} {
		t.Run(file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "plain", file))
			require.NoError(t, err)
			srv := robbytest.NewServer()
			defer srv.Close()
			srv.Reply(robbytest.Handler(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write(body)
			}), robbytest.Text("All done."))
			rec := new(toolRecorder)
			a := newTranscriptAgent(t, srv, rec.tools()...)
			res, err := a.Run(context.Background(), "Go.")
			require.NoError(t, err)
			require.Len(t, res.ToolCalls, 1)
			assert.Equal(t, want, res.ToolCalls[0].Call.Arguments)
			assert.Equal(t, []string{"get_weather " + canonicalJSON(t, want)}, rec.received())
			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			require.Len(t, reqs[1].Messages[1].ToolCalls, 1)
			assert.Equal(t, want, reqs[1].Messages[1].ToolCalls[0].Arguments)
		})
	}
}

// checkArgumentFragments: the fragments streamed for each call, joined,
// are its arguments, and name it by the id it runs with.
func checkArgumentFragments(t *testing.T, fragments map[string]string, calls []ToolCall) {
	t.Helper()
	ids := make(map[string]bool)
	for _, c := range calls {
		ids[c.ID] = true
		args := strings.TrimSpace(jsonstream.WellFormed([]byte(fragments[c.ID])))
		if args == "" || args == "null" {
			args = "{}"
		}
		assert.Equal(t, c.Arguments, args, "the fragments of call %s", c.ID)
	}
	for id := range fragments {
		assert.True(t, ids[id], "fragments of call %q, which never came", id)
	}
}
