package chatwire

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/openai/openai-go/v3"
	sjson "github.com/segmentio/encoding/json"
)

// robby builds request bodies itself, from parts encoded once. Each message is
// encoded when it is first sent, the tools when the tool set is built, the
// parameters when the agent is. openai-go would encode the whole conversation
// again on every turn, a cost that grows with its length.

// AppendArray appends a JSON array of the values of the lists, in order.
func AppendArray(b []byte, lists ...[]json.RawMessage) []byte {
	b = append(b, '[')
	first := true
	for _, list := range lists {
		for _, v := range list {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, v...)
		}
	}
	return append(b, ']')
}

// EncodeHead encodes a request's parameters, messages and tools left out,
// as a JSON object without its closing brace. A streamed request asks for
// usage unless the parameters say otherwise.
func EncodeHead(p *openai.ChatCompletionNewParams, stream bool) ([]byte, error) {
	q := *p
	q.Messages, q.Tools = nil, nil
	if stream && !q.StreamOptions.IncludeUsage.Valid() {
		q.StreamOptions.IncludeUsage = openai.Bool(true)
	}
	b, err := q.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("chat completion: encoding the parameters: %w", err)
	}
	if len(b) < 2 || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("robby: chat completion: parameters encoded as %s, not an object", b)
	}
	return b[:len(b)-1], nil
}

// EncodeMessages encodes the messages from raw's length on, appending them
// to raw.
func EncodeMessages(raw []json.RawMessage, msgs []openai.ChatCompletionMessageParamUnion) ([]json.RawMessage, error) {
	for i := len(raw); i < len(msgs); i++ {
		b, err := msgs[i].MarshalJSON()
		if err != nil {
			return raw, fmt.Errorf("chat completion: encoding message %d: %w", i, err)
		}
		raw = append(raw, b)
	}
	return raw, nil
}

// EncodeTools encodes tool definitions, one value each.
func EncodeTools(tools []openai.ChatCompletionToolUnionParam) ([]json.RawMessage, error) {
	raw := make([]json.RawMessage, len(tools))
	for i := range tools {
		b, err := tools[i].MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("encoding tool %d: %w", i, err)
		}
		raw[i] = b
	}
	return raw, nil
}

// FunctionToolJSON encodes a function tool's definition from its encoded
// parameters (see schemas.Args.ParamsJSON). The bytes are openai-go's for
// openai.ChatCompletionFunctionTool. It costs one allocation, not some forty.
// An empty description is left out, as robby leaves it unset.
func FunctionToolJSON(name, description string, params json.RawMessage) json.RawMessage {
	b := make([]byte, 0, len(name)+len(description)+len(params)+64)
	b = append(b, `{"function":{"name":`...)
	b = sjson.AppendEscape(b, name, 0)
	if description != "" {
		b = append(b, `,"description":`...)
		b = sjson.AppendEscape(b, description, 0)
	}
	if params != nil {
		b = append(b, `,"parameters":`...)
		b = append(b, params...)
	}
	return append(b, `},"type":"function"}`...)
}

// The messages robby makes itself, encoded as it makes them. openai-go's
// encoder costs some twenty allocations a message, these one.

// UserJSON encodes openai.UserMessage(text).
func UserJSON(text string) json.RawMessage {
	b := make([]byte, 0, len(text)+32)
	b = append(b, `{"role":"user","content":`...)
	b = sjson.AppendEscape(b, text, 0)
	return append(b, '}')
}

// ToolJSON encodes openai.ToolMessage(content, id).
func ToolJSON(content, id string) json.RawMessage {
	b := make([]byte, 0, len(content)+len(id)+48)
	b = append(b, `{"role":"tool","content":`...)
	b = sjson.AppendEscape(b, content, 0)
	b = append(b, `,"tool_call_id":`...)
	b = sjson.AppendEscape(b, id, 0)
	return append(b, '}')
}

// A Call is robby.ToolCall, whose package this one cannot import.
type Call interface {
	~struct{ ID, Name, Arguments string }
}

// AssistantJSON encodes the assistant message of a reply (see reply.message).
// It holds its text, if any or if it calls nothing, and its calls, with the
// provider's fields of each.
func AssistantJSON[C Call](text string, calls []C, extras map[string]map[string]any) (json.RawMessage, error) {
	b := make([]byte, 0, len(text)+64)
	b = append(b, `{"role":"assistant"`...)
	if text != "" || len(calls) == 0 {
		b = append(b, `,"content":`...)
		b = sjson.AppendEscape(b, text, 0)
	}
	if len(calls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i := range calls {
			c := struct{ ID, Name, Arguments string }(calls[i])
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = sjson.AppendEscape(b, c.ID, 0)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = sjson.AppendEscape(b, c.Name, 0)
			b = append(b, `,"arguments":`...)
			b = sjson.AppendEscape(b, c.Arguments, 0)
			b = append(b, '}')
			var err error
			if b, err = appendFields(b, extras[c.ID]); err != nil {
				return nil, err
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// appendFields appends the members of an object, in the order of their
// names, each after a comma.
func appendFields(b []byte, fields map[string]any) ([]byte, error) {
	if len(fields) == 0 {
		return b, nil // nearly every call: sorting no keys costs allocations too
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		b = append(b, ',')
		b = sjson.AppendEscape(b, k, 0)
		b = append(b, ':')
		if raw, ok := fields[k].(json.RawMessage); ok {
			b = append(b, raw...)
			continue
		}
		v, err := json.Marshal(fields[k])
		if err != nil {
			return nil, fmt.Errorf("encoding the tool call field %q: %w", k, err)
		}
		b = append(b, v...)
	}
	return b, nil
}
