package openaiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	sjson "github.com/segmentio/encoding/json"
)

// The endpoint reads a request's messages and tools itself. It checks their
// shape and keeps each one's JSON as the client sent it. openai-go's decoder
// costs hundreds of bytes of memory per byte of a body made of many small
// values (a million one-letter messages, content parts or tool calls). Its
// encoder would then make the same JSON again. Here a message costs a few
// allocations, and its bytes are sent on as they came (see param.Override).
// Memory so grows with the body's size, not with how finely it is split.

// chatRequest is a chat-completions request as the server reads it.
type chatRequest struct {
	model        string
	stream       bool
	includeUsage bool // stream_options.include_usage
	messages     []openai.ChatCompletionMessageParamUnion
	tools        []openai.FunctionDefinitionParam
	fields       map[string]json.RawMessage // every member, for the parameters
}

// badRequest is a request the server refuses with 400 and code.
type badRequest struct {
	code, msg string
}

func (e *badRequest) Error() string { return e.msg }

func invalid(code, format string, args ...any) error {
	return &badRequest{code: code, msg: fmt.Sprintf(format, args...)}
}

// decodeChatRequest reads body, refusing more than maxMessages messages.
func decodeChatRequest(body []byte, maxMessages int) (*chatRequest, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req.fields); err != nil {
		return nil, invalid("invalid_json", "Invalid JSON in the request body: %v", err)
	}
	if req.fields == nil {
		return nil, invalid("invalid_json", "The request body must be a JSON object.")
	}
	// The members the server reads itself, matched in any case, as
	// encoding/json does. It skips the others without allocating.
	var head struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return nil, invalid("invalid_request", "Invalid request: %v", err)
	}
	req.model, req.stream, req.includeUsage = head.Model, head.Stream, head.StreamOptions.IncludeUsage

	msgs, err := splitArray(req.fields["messages"], "messages", maxMessages)
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, invalid("missing_messages", "'messages' is required and must not be empty.")
	}
	req.messages = make([]openai.ChatCompletionMessageParamUnion, len(msgs))
	for i, raw := range msgs {
		if req.messages[i], err = decodeMessage(raw); err != nil {
			return nil, invalid("invalid_request", "messages[%d] %v", i, err)
		}
	}

	tools, err := splitArray(req.fields["tools"], "tools", -1)
	if err != nil {
		return nil, err
	}
	req.tools = make([]openai.FunctionDefinitionParam, len(tools))
	for i, raw := range tools {
		if req.tools[i], err = decodeTool(raw); err != nil {
			return nil, invalid("invalid_request", "tools[%d] %v", i, err)
		}
	}
	return &req, nil
}

// decodeMessage checks that raw is a message of a known role and shape, and
// returns it to be sent on as raw. Its fields are unset but those the agent
// reads to know which tool calls await results.
func decodeMessage(raw json.RawMessage) (openai.ChatCompletionMessageParamUnion, error) {
	var m wireRequestMessage
	var u openai.ChatCompletionMessageParamUnion
	if len(raw) == 0 || raw[0] != '{' {
		return u, errors.New("is not a message")
	}
	if err := parse(raw, &m); err != nil {
		return u, fmt.Errorf("is not a message: %v", err)
	}
	var err error
	switch m.Role {
	case "system":
		err = checkContent(m.Content, true)
		u.OfSystem = override[openai.ChatCompletionSystemMessageParam](raw)
	case "developer":
		err = checkContent(m.Content, true)
		u.OfDeveloper = override[openai.ChatCompletionDeveloperMessageParam](raw)
	case "user":
		err = checkContent(m.Content, true)
		u.OfUser = override[openai.ChatCompletionUserMessageParam](raw)
	case "assistant":
		var calls []openai.ChatCompletionMessageToolCallUnionParam
		if err = checkContent(m.Content, false); err == nil {
			calls, err = checkToolCalls(m.ToolCalls)
		}
		if err == nil && isNull(m.Content) && len(calls) == 0 && m.Refusal == nil {
			err = errors.New("is an assistant message with neither content nor tool_calls")
		}
		u.OfAssistant = override[openai.ChatCompletionAssistantMessageParam](raw)
		u.OfAssistant.ToolCalls = calls
	case "tool":
		if err = checkContent(m.Content, true); err == nil && m.ToolCallID == nil {
			err = errors.New("is a tool message without 'tool_call_id'")
		}
		u.OfTool = override[openai.ChatCompletionToolMessageParam](raw)
		if m.ToolCallID != nil {
			u.OfTool.ToolCallID = *m.ToolCallID
		}
	case "function":
		if m.Name == nil {
			err = errors.New("is a function message without 'name'")
		}
		//lint:ignore SA1019 deprecated, but clients still send it and OpenAI takes it
		u.OfFunction = override[openai.ChatCompletionFunctionMessageParam](raw)
	default:
		err = errors.New("is not a message with a known role")
	}
	return u, err
}

// override returns a T that encodes as raw.
func override[T param.ParamStruct, PT param.InferPtr[T]](raw json.RawMessage) PT {
	v := PT(new(T))
	param.SetJSON(raw, v)
	return v
}

// parse decodes one value of a request, which outlives v, with
// segmentio/encoding. v's strings share raw's memory, so checking a value
// allocates next to nothing.
func parse(raw []byte, v any) error {
	_, err := sjson.Parse(raw, v, sjson.ZeroCopy)
	return err
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// checkContent checks a message's content: a string, or an array of parts, each
// an object with a type.
func checkContent(raw json.RawMessage, required bool) error {
	switch {
	case isNull(raw):
		if required {
			return errors.New("has no 'content'")
		}
		return nil
	case raw[0] == '"':
		return nil
	case raw[0] != '[':
		return errors.New("has a 'content' that is neither a string nor an array of parts")
	}
	var parts []struct {
		Type string `json:"type"`
	}
	if err := parse(raw, &parts); err != nil {
		return fmt.Errorf("has a 'content' part that is not an object: %v", err)
	}
	for i, p := range parts {
		if p.Type == "" {
			return fmt.Errorf("has a 'content' part %d without a type", i)
		}
	}
	return nil
}

// checkToolCalls checks an assistant message's tool calls. It returns them, so
// the agent knows which calls await results.
func checkToolCalls(raw json.RawMessage) ([]openai.ChatCompletionMessageToolCallUnionParam, error) {
	if isNull(raw) {
		return nil, nil
	}
	var calls []wireRequestToolCall
	if err := parse(raw, &calls); err != nil {
		return nil, fmt.Errorf("has 'tool_calls' that are not tool calls: %v", err)
	}
	out := make([]openai.ChatCompletionMessageToolCallUnionParam, len(calls))
	for i, c := range calls {
		if c.ID == "" || c.Function == nil || c.Function.Name == "" {
			return nil, fmt.Errorf("has a tool call %d without an id or a function name", i)
		}
		out[i].OfFunction = &openai.ChatCompletionMessageFunctionToolCallParam{ID: c.ID,
			Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Function.Name, Arguments: c.Function.Arguments}}
	}
	return out, nil
}

// decodeTool checks that raw is a function tool. It returns its definition, to
// be sent on as raw, with the name the run knows its calls by.
func decodeTool(raw json.RawMessage) (openai.FunctionDefinitionParam, error) {
	var t struct {
		Type     string          `json:"type"`
		Function json.RawMessage `json:"function"`
	}
	var f struct {
		Name string `json:"name"`
	}
	if len(raw) == 0 || raw[0] != '{' {
		return openai.FunctionDefinitionParam{}, errors.New("is not a tool")
	}
	if err := parse(raw, &t); err != nil {
		return openai.FunctionDefinitionParam{}, fmt.Errorf("is not a tool: %v", err)
	}
	if t.Type != "function" {
		return openai.FunctionDefinitionParam{}, errors.New("is not a function tool: only function tools are supported")
	}
	if len(t.Function) == 0 || t.Function[0] != '{' || parse(t.Function, &f) != nil || f.Name == "" {
		return openai.FunctionDefinitionParam{}, errors.New("is a function tool without a name")
	}
	def := override[openai.FunctionDefinitionParam](t.Function)
	def.Name = f.Name
	return *def, nil
}

// splitArray returns the elements of raw, a JSON array, as slices of it. Absent
// or null means none. It refuses more than limit (< 0: no limit) before it
// allocates anything. raw is valid JSON: it comes from a decoded body.
func splitArray(raw json.RawMessage, name string, limit int) ([]json.RawMessage, error) {
	if isNull(raw) {
		return nil, nil
	}
	if raw[0] != '[' {
		return nil, invalid("invalid_request", "'%s' must be an array.", name)
	}
	n := 0
	eachElement(raw, func([]byte) { n++ })
	if limit >= 0 && n > limit {
		return nil, invalid("too_many_"+name, "'%s' holds %d %s; this server takes at most %d.", name, n, name, limit)
	}
	out := make([]json.RawMessage, 0, n)
	eachElement(raw, func(v []byte) { out = append(out, v) })
	return out, nil
}

// eachElement calls f with each element of a valid JSON array.
func eachElement(array []byte, f func([]byte)) {
	depth, start := 0, -1
	inString, escaped := false, false
	end := func(i int) {
		if start >= 0 {
			f(bytes.TrimRight(array[start:i], " \t\r\n"))
		}
		start = -1
	}
	for i := 1; i < len(array); i++ {
		b := array[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		case '"':
			inString = true
		case '[', '{':
			depth++
		case ']', '}':
			if depth == 0 {
				end(i)
				return
			}
			depth--
		case ',':
			if depth == 0 {
				end(i)
				continue
			}
		}
		if start < 0 {
			start = i
		}
	}
}
