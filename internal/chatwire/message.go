package chatwire

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"
)

// DecodeMessage decodes a chat message as
// openai.ChatCompletionMessageParamUnion's UnmarshalJSON does, to the same
// value. A stored conversation is decoded on every turn that continues it,
// and openai-go's reflective decoder costs some 60 allocations and 17 µs a
// message. So the messages robby writes itself (UserJSON, ToolJSON, and
// AssistantJSON without a provider's fields) are read here, as they are
// written; any other JSON goes to openai-go.
func DecodeMessage(raw []byte) (openai.ChatCompletionMessageParamUnion, error) {
	if m, ok := decodeOwn(raw); ok {
		return m, nil
	}
	var m openai.ChatCompletionMessageParamUnion
	err := m.UnmarshalJSON(raw)
	return m, err
}

// decodeOwn decodes raw if it is one of the shapes robby writes, byte for
// byte, and reports whether it was.
func decodeOwn(raw []byte) (openai.ChatCompletionMessageParamUnion, bool) {
	r := reader{b: raw, ok: true}
	var m openai.ChatCompletionMessageParamUnion
	switch {
	case r.opt(`{"role":"user","content":`):
		p := &openai.ChatCompletionUserMessageParam{Role: "user"}
		p.Content.OfString = openai.String(r.str())
		m.OfUser = p
	case r.opt(`{"role":"tool","content":`):
		p := &openai.ChatCompletionToolMessageParam{Role: "tool"}
		p.Content.OfString = openai.String(r.str())
		r.lit(`,"tool_call_id":`)
		p.ToolCallID = r.str()
		m.OfTool = p
	case r.opt(`{"role":"assistant"`):
		m.OfAssistant = r.assistant()
	default:
		return m, false
	}
	r.lit("}")
	return m, r.ok && len(r.b) == 0
}

// assistant reads the rest of an assistant message as AssistantJSON writes
// it: its content, its calls, or both.
func (r *reader) assistant() *openai.ChatCompletionAssistantMessageParam {
	p := &openai.ChatCompletionAssistantMessageParam{Role: "assistant"}
	if r.opt(`,"content":`) {
		p.Content.OfString = openai.String(r.str())
	}
	if !r.opt(`,"tool_calls":[`) {
		return p
	}
	for r.ok {
		c := &openai.ChatCompletionMessageFunctionToolCallParam{Type: "function"}
		r.lit(`{"id":`)
		c.ID = r.str()
		r.lit(`,"type":"function","function":{"name":`)
		c.Function.Name = r.str()
		r.lit(`,"arguments":`)
		c.Function.Arguments = r.str()
		r.lit(`}}`)
		p.ToolCalls = append(p.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: c})
		if !r.opt(",") {
			break
		}
	}
	r.lit("]")
	return p
}

// A reader reads JSON written by this package's encoders from the front of
// b. Once something else is found, ok is false and every read is a no-op.
type reader struct {
	b  []byte
	ok bool
}

// lit reads s, which must come next.
func (r *reader) lit(s string) {
	r.ok = r.ok && r.opt(s)
}

// opt reads s if it comes next, and reports whether it did.
func (r *reader) opt(s string) bool {
	if !r.ok || !bytes.HasPrefix(r.b, []byte(s)) {
		return false
	}
	r.b = r.b[len(s):]
	return true
}

// str reads a string, if what openai-go reads of it is plain: UTF-8, with
// no escaped surrogate. (openai-go reads some strings with gjson and some
// with encoding/json, which differ only there.)
func (r *reader) str() string {
	if !r.ok || len(r.b) == 0 || r.b[0] != '"' {
		r.ok = false
		return ""
	}
	escaped := false
	for i := 1; i < len(r.b); i++ {
		switch c := r.b[i]; {
		case c == '\\':
			if surrogate(r.b[i+1:]) {
				r.ok = false
				return ""
			}
			escaped = true
			i++ // the escaped byte, which may be a quote
		case c < 0x20:
			r.ok = false // invalid JSON: openai-go's to read
			return ""
		case c == '"':
			tok := r.b[:i+1]
			r.b = r.b[i+1:]
			switch {
			case !utf8.Valid(tok) || escaped && !json.Valid(tok):
				r.ok = false
				return ""
			case escaped:
				return gjson.ParseBytes(tok).Str
			}
			return string(tok[1:i])
		}
	}
	r.ok = false
	return ""
}

// surrogate reports whether b, after a backslash, escapes a UTF-16
// surrogate: \uD800 to \uDFFF.
func surrogate(b []byte) bool {
	return len(b) >= 3 && b[0] == 'u' && (b[1] == 'd' || b[1] == 'D') && strings.IndexByte("89abcdefABCDEF", b[2]) >= 0
}
