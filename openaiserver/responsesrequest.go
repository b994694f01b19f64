package openaiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby"
)

// responsesRequest is a Responses request as the endpoint runs it. Its input is
// turned into chat messages, the form in which robby keeps a conversation (and
// a [robby.Store] stores it).
type responsesRequest struct {
	wire  wireResponsesRequest
	store bool // the client asks for the response to be kept
	// background: the client asks for the response at once, queued, to
	// poll it with GET (OpenAI's background mode).
	background bool
	input      []chatMessage // in order
	tools      []openai.FunctionDefinitionParam
	params     openai.ChatCompletionNewParams
	text       wireText // the text member, echoed
	// conversation names the conversation of the Conversations API the
	// response runs in, if any.
	conversation string
	format       []robby.RunOption // structured output's schema: responsesformat.go
}

// chatMessage is a chat-completions message as robby stores it, made of
// an input item.
type chatMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content,omitempty"`    // a string or []chatPart
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"` // without an Index, as stored
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatPart struct {
	Type     string        `json:"type"`
	Text     string        `json:"text,omitempty"`
	ImageURL *chatImageURL `json:"image_url,omitempty"`
}

type chatImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// decodeResponsesRequest reads body, refusing an input of more than
// maxItems items. Like a chat completion's, a request is read with
// segmentio/encoding, its strings sharing the body's memory.
func decodeResponsesRequest(body []byte, maxItems int) (*responsesRequest, error) {
	if !json.Valid(body) { // as encoding/json reads it: one value, nothing after it
		var v json.RawMessage
		return nil, invalid("invalid_json", "Invalid JSON in the request body: %v", json.Unmarshal(body, &v))
	}
	if b := bytes.TrimLeft(body, " \t\r\n"); b[0] != '{' {
		return nil, invalid("invalid_json", "The request body must be a JSON object.")
	}
	req := &responsesRequest{store: true}
	if err := parse(body, &req.wire); err != nil {
		return nil, invalid("invalid_request", "Invalid request: %v", err)
	}
	w := &req.wire
	for _, p := range []struct {
		name string
		v    json.RawMessage
	}{{"prompt", w.Prompt},
		{"tool_choice", w.ToolChoice}, {"reasoning", w.Reasoning}, {"max_tool_calls", w.MaxToolCalls},
		{"top_logprobs", w.TopLogprobs}} {
		if !isNull(p.v) && !harmless(p.name, p.v) {
			return nil, invalid("unsupported_parameter", "'%s' is not supported by this endpoint.", p.name)
		}
	}
	if req.wire.Store != nil {
		req.store = *req.wire.Store
	}
	if !isNull(w.Background) {
		if err := json.Unmarshal(w.Background, &req.background); err != nil {
			return nil, invalid("invalid_request", "'background' must be true or false.")
		}
	}
	var err error
	if req.conversation, err = conversationID(w.Conversation); err != nil {
		return nil, err
	}
	if req.conversation != "" && w.PreviousResponseID != nil {
		return nil, invalid("invalid_request", "'conversation' and 'previous_response_id' cannot both be given.")
	}
	if req.input, err = decodeInput(req.wire.Input, maxItems); err != nil {
		return nil, err
	}
	for i, t := range req.wire.Tools {
		def, err := functionTool(t)
		if err != nil {
			return nil, invalid("invalid_request", "tools[%d] %v", i, err)
		}
		req.tools = append(req.tools, def)
	}
	if w.Temperature != nil {
		req.params.Temperature = openai.Float(*w.Temperature)
	}
	if w.TopP != nil {
		req.params.TopP = openai.Float(*w.TopP)
	}
	if w.MaxOutputTokens != nil {
		req.params.MaxCompletionTokens = openai.Int(*w.MaxOutputTokens)
	}
	if w.ParallelToolCalls != nil {
		req.params.ParallelToolCalls = openai.Bool(*w.ParallelToolCalls)
	}
	if req.text, req.format, err = decodeText(w.Text, &req.params); err != nil {
		return nil, err
	}
	return req, nil
}

// conversationID reads a request's conversation: its ID, or an object
// with its ID.
func conversationID(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var id string
	if raw[0] == '{' {
		var ref struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(raw, &ref) != nil {
			return "", invalid("invalid_request", "'conversation' must be an ID or an object with an 'id'.")
		}
		id = ref.ID
	} else if json.Unmarshal(raw, &id) != nil {
		return "", invalid("invalid_request", "'conversation' must be an ID or an object with an 'id'.")
	}
	if id == "" {
		return "", invalid("invalid_request", "'conversation' must name a conversation.")
	}
	return id, nil
}

// harmless reports whether an unsupported member asks for what the
// endpoint does anyway.
func harmless(name string, v json.RawMessage) bool {
	switch name {
	case "tool_choice":
		return string(v) == `"auto"`
	}
	return false
}

// functionTool reads a function tool of the client's.
func functionTool(t wireTool) (openai.FunctionDefinitionParam, error) {
	if t.Type != "function" {
		return openai.FunctionDefinitionParam{}, errors.New("is not a function tool: only function tools are supported")
	}
	if t.Name == "" {
		return openai.FunctionDefinitionParam{}, errors.New("is a function tool without a name")
	}
	def := struct {
		Name        string          `json:"name"`
		Description *string         `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
		Strict      *bool           `json:"strict,omitempty"`
	}{t.Name, t.Description, t.Parameters, t.Strict}
	raw, err := json.Marshal(def)
	if err != nil {
		return openai.FunctionDefinitionParam{}, fmt.Errorf("has parameters that are not JSON: %v", err)
	}
	p := override[openai.FunctionDefinitionParam](raw)
	p.Name = t.Name
	return *p, nil
}

// decodeInput turns a request's input, a string or a list of items, into
// chat messages.
func decodeInput(raw json.RawMessage, maxItems int) ([]chatMessage, error) {
	if isNull(raw) {
		return nil, invalid("missing_input", "'input' is required.")
	}
	if raw[0] == '"' {
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, invalid("invalid_request", "'input' is not a string: %v", err)
		}
		return []chatMessage{{Role: "user", Content: text}}, nil
	}
	items, err := splitArray(raw, "input", maxItems)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, invalid("missing_input", "'input' must not be empty.")
	}
	msgs := make([]chatMessage, 0, len(items))
	var it wireInputItem
	for i, item := range items {
		it = wireInputItem{}
		if len(item) == 0 || item[0] != '{' || parse(item, &it) != nil {
			return nil, invalid("invalid_request", "input[%d] is not an input item.", i)
		}
		if msgs, err = addItem(msgs, it); err != nil {
			return nil, invalid("invalid_request", "input[%d] %v", i, err)
		}
	}
	return msgs, nil
}

// addItem adds an input item to msgs. A function call joins the assistant
// message just before it, as the calls of one turn do.
func addItem(msgs []chatMessage, it wireInputItem) ([]chatMessage, error) {
	switch it.Type {
	case "", "message":
		m, err := message(it)
		return append(msgs, m), err
	case "function_call":
		if it.CallID == "" || it.Name == "" {
			return msgs, errors.New("is a function call without a call_id or a name")
		}
		var c wireToolCall
		c.ID, c.Type, c.Function.Name, c.Function.Arguments = it.CallID, "function", it.Name, it.Args
		if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
			msgs[n-1].ToolCalls = append(msgs[n-1].ToolCalls, c)
			return msgs, nil
		}
		return append(msgs, chatMessage{Role: "assistant", ToolCalls: []wireToolCall{c}}), nil
	case "function_call_output":
		if it.CallID == "" {
			return msgs, errors.New("is a function call output without a call_id")
		}
		out, err := text(it.Output)
		if err != nil {
			return msgs, fmt.Errorf("has an 'output' %v", err)
		}
		return append(msgs, chatMessage{Role: "tool", ToolCallID: it.CallID, Content: out}), nil
	}
	return msgs, fmt.Errorf("is of type %q, which this endpoint does not support", it.Type)
}

// message turns an input message into a chat message.
func message(it wireInputItem) (chatMessage, error) {
	m := chatMessage{Role: it.Role}
	switch it.Role {
	case "user":
		if len(it.Content) > 0 && it.Content[0] == '[' {
			parts, err := userParts(it.Content)
			m.Content = parts
			return m, err
		}
	case "system", "developer", "assistant":
	default:
		return m, errors.New("is not a message with a known role")
	}
	t, err := text(it.Content)
	if err != nil {
		return m, fmt.Errorf("has a 'content' %v", err)
	}
	m.Content = t
	return m, nil
}

// userParts turns the content parts of a user message into chat parts.
func userParts(raw json.RawMessage) ([]chatPart, error) {
	var parts []wireInputPart
	if err := parse(raw, &parts); err != nil {
		return nil, fmt.Errorf("has a 'content' part that is not an object: %v", err)
	}
	out := make([]chatPart, len(parts))
	for i, p := range parts {
		switch p.Type {
		case "input_text", "output_text":
			out[i] = chatPart{Type: "text", Text: p.Text}
		case "input_image":
			if p.ImageURL == "" {
				return nil, fmt.Errorf("has an image part %d without an image_url (file_id is not supported)", i)
			}
			out[i] = chatPart{Type: "image_url", ImageURL: &chatImageURL{URL: p.ImageURL, Detail: p.Detail}}
		default:
			return nil, fmt.Errorf("has a 'content' part %d of type %q, which this endpoint does not support", i, p.Type)
		}
	}
	return out, nil
}

// text reads content that must be text: a string, or text parts joined.
func text(raw json.RawMessage) (string, error) {
	switch {
	case isNull(raw):
		return "", errors.New("that is missing")
	case raw[0] == '"':
		var s string
		err := parse(raw, &s)
		return s, err
	}
	var parts []wireInputPart
	if err := parse(raw, &parts); err != nil {
		return "", errors.New("that is neither a string nor an array of text parts")
	}
	var b strings.Builder
	for i, p := range parts {
		if p.Type != "input_text" && p.Type != "output_text" && p.Type != "text" {
			return "", fmt.Errorf("part %d of type %q, where only text is supported", i, p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// encode returns the messages as robby keeps them, each one's JSON. It also
// returns the messages that send that JSON as it is (see override). They carry
// the fields the agent reads to know which calls await results.
func encode(msgs []chatMessage) ([]json.RawMessage, []openai.ChatCompletionMessageParamUnion, error) {
	raws := make([]json.RawMessage, len(msgs))
	unions := make([]openai.ChatCompletionMessageParamUnion, len(msgs))
	for i, m := range msgs {
		raw, err := json.Marshal(m)
		if err != nil {
			return nil, nil, err
		}
		raws[i] = raw
		u := &unions[i]
		switch m.Role {
		case "system":
			u.OfSystem = override[openai.ChatCompletionSystemMessageParam](raw)
		case "developer":
			u.OfDeveloper = override[openai.ChatCompletionDeveloperMessageParam](raw)
		case "user":
			u.OfUser = override[openai.ChatCompletionUserMessageParam](raw)
		case "assistant":
			u.OfAssistant = override[openai.ChatCompletionAssistantMessageParam](raw)
			for _, c := range m.ToolCalls {
				u.OfAssistant.ToolCalls = append(u.OfAssistant.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Function.Name, Arguments: c.Function.Arguments}}})
			}
		case "tool":
			u.OfTool = override[openai.ChatCompletionToolMessageParam](raw)
			u.OfTool.ToolCallID = m.ToolCallID
		}
	}
	return raws, unions, nil
}
