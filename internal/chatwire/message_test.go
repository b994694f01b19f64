package chatwire

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/openai/openai-go/v3"
)

// robbyCall is robby.ToolCall's shape, for AssistantJSON.
type robbyCall struct{ ID, Name, Arguments string }

// texts are strings that escape in every way a message's text can.
var texts = []string{
	"", "Paris.", `say "hi" \ bye`, "line\nnext\ttab\r", "<b>&amp;</b>", "é, 東京, 🙂", "\u2028\u2029",
	"\x00\x1f", "bad \xff utf-8", `{"q":"capital of France"}`, "\\u0041 not an escape",
}

// openaiDecode is what robby's decoder must equal: openai-go's.
func openaiDecode(t testing.TB, raw []byte) (openai.ChatCompletionMessageParamUnion, error) {
	t.Helper()
	var m openai.ChatCompletionMessageParamUnion
	err := m.UnmarshalJSON(raw)
	return m, err
}

// ownMessages are the messages robby writes, with every text in turn.
func ownMessages(t testing.TB) []json.RawMessage {
	t.Helper()
	var raws []json.RawMessage
	for _, s := range texts {
		raws = append(raws, UserJSON(s), ToolJSON(s, "call_"+s))
		for _, calls := range [][]robbyCall{nil, {{"call_1", "lookup", s}}, {{"a", s, "{}"}, {s, "b", `{"x":1}`}}} {
			for _, text := range []string{"", s} {
				raw, err := AssistantJSON(text, calls, nil)
				if err != nil {
					t.Fatal(err)
				}
				raws = append(raws, raw)
			}
		}
	}
	return raws
}

func TestDecodeMessageReadsOwnShapes(t *testing.T) {
	for _, raw := range ownMessages(t) {
		got, ok := decodeOwn(raw)
		if !ok {
			t.Errorf("decodeOwn(%s): not read, robby wrote it", raw)
			continue
		}
		want, err := openaiDecode(t, raw)
		if err != nil {
			t.Fatalf("openai-go refuses %s: %v", raw, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("decodeOwn(%s)\n got %#v\nwant %#v", raw, got, want)
		}
	}
}

func TestDecodeMessageLeavesOthersToOpenAI(t *testing.T) {
	provider, err := AssistantJSON("", []robbyCall{{"c", "f", "{}"}},
		map[string]map[string]any{"c": {"extra_content": map[string]any{"google": map[string]any{"thought_signature": "x"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{
		`{"role":"user","content":[{"type":"text","text":"hi"}]}`,
		`{"role":"user","content":"hi","name":"ann"}`,
		`{"content":"hi","role":"user"}`,
		`{ "role":"user","content":"hi"}`,
		`{"role":"user","content":"hi"} `,
		`{"role":"user","content":"hi"}{}`,
		`{"role":"user","content":"unterminated}`,
		`{"role":"user","content":"bad \x escape"}`,
		`{"role":"user","content":"raw` + "\n" + `newline"}`,
		`{"role":"user","content":null}`,
		`{"role":"system","content":"be brief"}`,
		`{"role":"developer","content":"be brief"}`,
		`{"role":"assistant","content":"x","refusal":"no"}`,
		`{"role":"assistant","tool_calls":[]}`,
		`{"role":"assistant","tool_calls":[{"id":"c","type":"custom","custom":{"name":"f","input":"x"}}]}`,
		`{"role":"tool","tool_call_id":"c","content":"x"}`,
		string(provider),
	} {
		if _, ok := decodeOwn([]byte(raw)); ok {
			t.Errorf("decodeOwn(%s) read it: only robby's own shapes are read", raw)
		}
		got, gerr := DecodeMessage([]byte(raw))
		want, werr := openaiDecode(t, []byte(raw))
		if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("DecodeMessage(%s) = %#v, %v; openai-go: %#v, %v", raw, got, gerr, want, werr)
		}
	}
}

// FuzzDecodeMessage checks robby's decoder against openai-go's: on robby's
// own messages, which it must read itself, and on any bytes, where what it
// reads must be what openai-go reads.
func FuzzDecodeMessage(f *testing.F) {
	f.Add("Paris", "call_1", "lookup", `{"q":"x"}`, []byte(`{"role":"user","content":"hi"}`))
	f.Add("a\"b\\c\u00e9\n", "", "", "", []byte(`{"role":"assistant","content":"\ud800"}`))
	f.Add("\xff\xfe", "\x01", "<>", "&", []byte(`{"role":"tool","content":"x","tool_call_id":"\u0041"}`))
	f.Add("", "", "", "", []byte("{\"role\":\"user\",\"content\":\"\xff\xfe raw\"}"))
	f.Fuzz(func(t *testing.T, text, id, name, args string, raw []byte) {
		own := []json.RawMessage{UserJSON(text), ToolJSON(text, id)}
		for _, calls := range [][]robbyCall{nil, {{id, name, args}}, {{id, name, args}, {args, text, name}}} {
			a, err := AssistantJSON(text, calls, nil)
			if err != nil {
				t.Fatal(err)
			}
			own = append(own, a)
		}
		for _, o := range own {
			got, ok := decodeOwn(o)
			if !ok {
				t.Fatalf("decodeOwn(%s): not read, robby wrote it", o)
			}
			if want, err := openaiDecode(t, o); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("decodeOwn(%s)\n got %#v\nwant %#v (%v)", o, got, want, err)
			}
		}
		if got, ok := decodeOwn(raw); ok {
			if want, err := openaiDecode(t, raw); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("decodeOwn(%q)\n got %#v\nwant %#v (%v)", raw, got, want, err)
			}
		}
	})
}

// BenchmarkDecodeMessage decodes a tool turn's four messages with robby's
// decoder, against openai-go's alone.
func BenchmarkDecodeMessage(b *testing.B) {
	call, _ := AssistantJSON("", []robbyCall{{"call_abc123", "lookup", `{"q":"capital of France"}`}}, nil)
	answer, _ := AssistantJSON("The capital of France is Paris, and has been for centuries; a lovely city.", []robbyCall(nil), nil)
	msgs := []json.RawMessage{
		UserJSON("What is the capital of France? Please look it up."), call,
		ToolJSON("Paris is the capital of France.", "call_abc123"), answer,
	}
	b.Run("robby", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, m := range msgs {
				if _, err := DecodeMessage(m); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("openai-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, m := range msgs {
				if _, err := openaiDecode(b, m); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
