package robby

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/robby-go/robby/internal/chatwire"

	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/stretchr/testify/require"
)

// Fuzz targets. Each has a seed corpus of real-format inputs under
// testdata/fuzz/<target>, which plain `go test` runs as regression tests;
// `go test -run '^$' -fuzz '^FuzzAssembler$' -fuzztime 2m .` (and so on)
// explores from there.

// sseEvents splits an SSE body into the data of its events as openai-go's
// decoder does (ssestream.eventStreamDecoder): lines "data: x" are joined,
// each followed by a newline, and an empty line dispatches the event;
// "event:" and comment lines are read past.
func sseEvents(body []byte) [][]byte {
	scn := bufio.NewScanner(bytes.NewReader(body))
	scn.Buffer(nil, bufio.MaxScanTokenSize<<9)
	var events [][]byte
	var data []byte
	for scn.Scan() {
		line := scn.Bytes()
		if len(line) == 0 {
			if len(data) > 0 {
				events = append(events, data)
				data = nil
			}
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		if string(name) == "data" {
			data = append(data, value...)
			data = append(data, '\n')
		}
	}
	return events // an event without its empty line is never dispatched
}

// FuzzAssembler feeds the chunks of an SSE transcript to the tool-call
// assembler, as the streaming loop does, and checks what it makes of them.
// Chunks robby does not decode are left out, and so is [DONE], which
// ends a real stream, as an undecodable chunk or an error event does: the
// assembler sees more that way.
func FuzzAssembler(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		r := new(reply)
		var text, reasoning strings.Builder
		fragments := make(map[*callBuilder]string)
		eventIDs := make(map[*callBuilder]string)
		for _, data := range sseEvents(body) {
			if bytes.HasPrefix(data, []byte("[DONE]")) {
				continue
			}
			var c chatwire.Response
			if chatwire.DecodeChunk(ssestream.Event{Data: data}, &c) != nil { // as the streaming loop does
				continue
			}
			dt, dr := r.addChunk(&c)
			text.WriteString(dt)
			reasoning.WriteString(dr)
			for _, ad := range r.args {
				require.NotEmpty(t, ad.fragment, "an empty argument fragment")
				fragments[ad.call] += ad.fragment
				if id, ok := eventIDs[ad.call]; ok {
					require.Equal(t, id, ad.call.eventID, "a call's fragments name it by two ids")
				}
				eventIDs[ad.call] = ad.call.eventID
			}
		}
		require.Equal(t, r.text.String(), text.String(), "the text deltas joined are not the reply's text")
		require.Equal(t, r.reasoning.String(), reasoning.String(), "the reasoning deltas joined are not the reply's reasoning")

		calls := r.toolCalls()
		require.Len(t, calls, len(r.calls))
		for i, b := range r.calls {
			require.Equal(t, string(b.args.Bytes()), fragments[b], "the fragments joined are not the arguments")
			if id, ok := eventIDs[b]; ok {
				require.Equal(t, id, calls[i].ID, "the call runs with another id than its fragments had")
			}
		}
		ids := make(map[string]bool, len(calls))
		for _, c := range calls {
			require.NotEmpty(t, c.ID, "call without an id")
			require.False(t, ids[c.ID], "id %q given to two calls", c.ID)
			ids[c.ID] = true
			require.NotEmpty(t, c.Arguments, "call %q without arguments", c.ID)
		}
		again := r.toolCalls()
		require.Len(t, again, len(calls))
		for i := range calls {
			require.Equal(t, calls[i].Name, again[i].Name)
			require.Equal(t, calls[i].Arguments, again[i].Arguments)
			if r.calls[i].id != "" && calls[i].ID == r.calls[i].id {
				require.Equal(t, calls[i].ID, again[i].ID, "a provider's id changed")
			}
		}

		m, raw := r.message(calls)
		b, err := json.Marshal(m)
		require.NoError(t, err, "the assistant message does not encode")
		require.NotNil(t, raw, "robby could not encode the assistant message")
		require.JSONEq(t, string(b), string(raw), "robby's JSON of the message is not openai-go's")
		// Keys are read exactly: a provider field may differ from a
		// known one only by case, which encoding/json would mix up.
		var msg struct {
			Role      string                       `json:"role"`
			Content   *string                      `json:"content"`
			ToolCalls []map[string]json.RawMessage `json:"tool_calls"`
		}
		require.NoError(t, json.Unmarshal(b, &msg), "%s", b)
		require.Equal(t, "assistant", msg.Role)
		require.Len(t, msg.ToolCalls, len(calls), "%s", b)
		for i, c := range msg.ToolCalls {
			var id, typ string
			var fn map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(c["id"], &id), "%s", b)
			require.NoError(t, json.Unmarshal(c["type"], &typ), "%s", b)
			require.NoError(t, json.Unmarshal(c["function"], &fn), "%s", b)
			var name, args string
			require.NoError(t, json.Unmarshal(fn["name"], &name), "%s", b)
			require.NoError(t, json.Unmarshal(fn["arguments"], &args), "%s", b)
			require.Equal(t, calls[i].ID, id, "a provider field overwrote the id: %s", b)
			require.Equal(t, "function", typ, "%s", b)
			require.Equal(t, fuzzAsJSON(calls[i].Name), name, "%s", b)
			require.Equal(t, fuzzAsJSON(calls[i].Arguments), args, "%s", b)
		}
		if r.text.Len() > 0 || len(calls) == 0 {
			require.NotNil(t, msg.Content, "%s", b)
			require.Equal(t, fuzzAsJSON(r.text.String()), *msg.Content)
		}
	})
}

// fuzzAsJSON returns s as it reads once sent as a JSON string: each byte
// of invalid UTF-8 replaced by U+FFFD.
func fuzzAsJSON(s string) string {
	b, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}

// fuzzArgs has a field of each kind a typed tool takes: required scalars,
// optional pointers, a list, a nested struct and a map.
type fuzzArgs struct {
	Name   string            `json:"name" jsonschema:"who to greet"`
	Count  int               `json:"count" jsonschema:"how many times"`
	Note   *string           `json:"note,omitempty" jsonschema:"an optional note"`
	Ratio  *float64          `json:"ratio,omitempty"`
	Loud   *bool             `json:"loud,omitempty"`
	Tags   []string          `json:"tags,omitempty"`
	Where  *fuzzPlace        `json:"where,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

type fuzzPlace struct {
	City string   `json:"city"`
	Lat  *float64 `json:"lat,omitempty"`
	Near []string `json:"near,omitempty"`
}

// fuzzFuncSchema is a hand-written schema of the kind MCP servers and
// name→func tools give: an enum, a const, bounds, a nullable type list,
// oneOf and a closed object.
const fuzzFuncSchema = `{
	"type": "object",
	"properties": {
		"city": {"type": "string", "minLength": 1, "maxLength": 64},
		"unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
		"days": {"type": "integer", "minimum": 1, "maximum": 14},
		"kind": {"const": "forecast"},
		"at": {"type": ["string", "null"], "format": "date-time"},
		"when": {"oneOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]},
		"ids": {"type": "array", "items": {"type": "string"}, "maxItems": 5, "uniqueItems": true},
		"opts": {"type": "object", "properties": {"x": {"type": ["number", "null"]}}, "additionalProperties": false}
	},
	"required": ["city"],
	"additionalProperties": false
}`

// errFuzzTool is the error the fuzzed tools return for an argument that
// asks for it.
var errFuzzTool = errors.New("the tool failed")

// FuzzToolArguments runs model arguments through a typed tool and a
// name→func tool as the loop does (toolset.call: nulls dropped, schema
// check, decoding, the call), and checks that a call either fails as an
// invalid-arguments or tool error, or gets values matching the JSON.
func FuzzToolArguments(f *testing.F) {
	var (
		mu      sync.Mutex // the calls run one at a time; the lock is for the race detector
		gotArgs fuzzArgs
		gotFunc map[string]any
	)
	typed := NewTool("greet", "Greets someone", func(_ context.Context, in fuzzArgs) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		gotArgs = in
		switch in.Name {
		case "fail":
			return "", errFuzzTool
		case "panic":
			panic("asked to")
		}
		return "hello " + in.Name, nil
	})
	var schema map[string]any
	require.NoError(f, json.Unmarshal([]byte(fuzzFuncSchema), &schema))
	untyped := FuncTool("weather", "Forecasts the weather", schema, func(_ context.Context, in map[string]any) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		gotFunc = in
		switch in["city"] {
		case "fail":
			return nil, errFuzzTool
		case "panic":
			panic("asked to")
		}
		return map[string]any{"city": in["city"], "temp": 21.5}, nil
	})
	ts, err := newToolset([]Tool{typed, untyped}, &callPolicy{limit: 4, maxOutput: 1 << 10, log: slog.New(slog.DiscardHandler)})
	require.NoError(f, err)

	f.Fuzz(func(t *testing.T, args string) {
		for _, name := range []string{"greet", "weather"} {
			mu.Lock()
			gotArgs, gotFunc = fuzzArgs{}, nil
			mu.Unlock()
			out, err := callTool(t.Context(), ts, ToolCall{ID: "call_1", Name: name, Arguments: args})
			mu.Lock()
			in, m := gotArgs, gotFunc
			mu.Unlock()
			if err != nil {
				if !errors.Is(err, ErrInvalidArguments) && !errors.Is(err, errFuzzTool) && !errors.Is(err, ErrToolPanic) {
					t.Fatalf("%s: error neither of the arguments nor of the tool: %v", name, err)
				}
				require.Empty(t, out)
				continue
			}
			// What the tool must have received: the arguments, without the
			// optional nulls.
			var want map[string]any
			require.NoError(t, json.Unmarshal(ts.byName[name].dropNulls(json.RawMessage(args)), &want),
				"%s: the call succeeded on arguments that are not a JSON object", name)
			if name == "weather" {
				require.Equal(t, want, m, "the function got other values than the JSON's")
				require.NotEmpty(t, m["city"])
				if u, ok := m["unit"]; ok {
					require.Contains(t, []any{"celsius", "fahrenheit"}, u, "a value out of the enum")
				}
				if d, ok := m["days"]; ok {
					require.True(t, d.(float64) >= 1 && d.(float64) <= 14, "days %v out of bounds", d)
				}
				continue
			}
			require.Equal(t, "hello "+in.Name, out)
			b, err := json.Marshal(in)
			require.NoError(t, err)
			var got map[string]any
			require.NoError(t, json.Unmarshal(b, &got))
			fuzzSameJSON(t, "arguments", want, got)
		}
		// fitOutput makes any output a tool message can carry.
		for _, max := range []int{0, 1, 7, 64} {
			fit := fitOutput(args, max)
			require.True(t, utf8.ValidString(fit))
			if max > 0 && len(fit) > max {
				require.Contains(t, fit, "\n[robby: output truncated: ")
				require.LessOrEqual(t, strings.Index(fit, "\n[robby: output truncated: "), max)
			}
		}
	})
}

// fuzzSameJSON checks that got, the re-encoded Go value, says what want,
// the model's JSON, said. A key missing from got is fine when want holds
// the zero value there, which omitempty leaves out.
func fuzzSameJSON(t *testing.T, path string, want, got any) {
	t.Helper()
	wm, ok := want.(map[string]any)
	if !ok {
		require.Equal(t, want, got, "%s: the tool got another value than the JSON's", path)
		return
	}
	gm, ok := got.(map[string]any)
	require.True(t, ok, "%s: an object became %#v", path, got)
	for k, w := range wm {
		g, ok := gm[k]
		if !ok {
			require.True(t, fuzzZero(w), "%s.%s: the value %#v was lost", path, k, w)
			continue
		}
		fuzzSameJSON(t, path+"."+k, w, g)
	}
	for k, g := range gm {
		if _, ok := wm[k]; !ok {
			require.True(t, fuzzZero(g), "%s.%s: the tool got %#v, which the JSON did not hold", path, k, g)
		}
	}
}

func fuzzZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case float64:
		return v == 0
	case bool:
		return !v
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// callTool runs one call as execute does, without its goroutines.
func callTool(ctx context.Context, ts *toolset, call ToolCall) (string, error) {
	t, run, err := ts.prepare(call)
	if err != nil {
		return "", err
	}
	out, err := ts.invoke(ctx, t, call, run)
	if err != nil {
		return "", err
	}
	return encodeResult(out)
}

// FuzzResponse reads a plain response's body as the loop does (decoded,
// then turned into a reply and an assistant message) and checks that
// robby's JSON of the message is openai-go's.
func FuzzResponse(f *testing.F) {
	for _, body := range []string{
		`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`,
		`{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"add","arguments":"{\"a\":1}"}},{"id":"call_1","type":"function","function":{"name":"mul","arguments":{"a":2}}}]},"finish_reason":"tool_calls"}]}`,
		`{"choices":[{"message":{"content":[{"type":"text","text":"parts"}],"reasoning":{"effort":"high"},"reasoning_content":"think","tool_calls":[{"function":{"name":"f","arguments":"{}"},"extra_content":{"google":{"thought_signature":"sig"}},"ID":"x"}]},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"tool_calls":[{"type":"custom","custom":{"name":"c","input":"x"}}]}}]}`,
		`{"choices":[]}`, `[]`, `{"choices":[{"message":{"content":"\xff\xfe"}}]}`,
	} {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		res, err := chatwire.DecodeResponse(body)
		if err != nil {
			return
		}
		r, err := replyOf(res)
		if err != nil {
			require.Nil(t, r)
			return
		}
		calls := r.toolCalls()
		require.Len(t, calls, len(res.Choices[0].Message.ToolCalls))
		m, raw := r.message(calls)
		b, err := json.Marshal(m)
		require.NoError(t, err, "the assistant message does not encode")
		require.NotNil(t, raw, "robby could not encode the assistant message")
		require.JSONEq(t, string(b), string(raw), "robby's JSON of the message is not openai-go's")
	})
}
