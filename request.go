package robby

import (
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3"
)

// robby builds request bodies itself, from parts encoded once: each message
// when it is first sent, the tools when the tool set is built, the
// parameters when the agent is. openai-go would encode the whole
// conversation again on every turn, a cost that grows with its length.

// A request is one chat-completion request, from its encoded parts.
type request struct {
	model    string            // for the logs
	head     []byte            // the parameters: a JSON object without its closing brace
	history  []json.RawMessage // the conversation
	pending  []json.RawMessage // messages sent with it, not in it yet
	tools    []json.RawMessage
	external []json.RawMessage // the caller's own tools
	stream   bool
}

// body returns the request's JSON.
func (r *request) body() []byte {
	n := len(r.head) + len(`,"messages":[],"tools":[],"stream":true}`)
	for _, parts := range [...][]json.RawMessage{r.history, r.pending, r.tools, r.external} {
		for _, p := range parts {
			n += len(p) + 1
		}
	}
	b := make([]byte, 0, n)
	b = append(b, r.head...)
	if len(r.head) > 1 {
		b = append(b, ',')
	}
	b = append(b, `"messages":`...)
	b = appendArray(b, r.history, r.pending)
	if len(r.tools)+len(r.external) > 0 {
		b = append(b, `,"tools":`...)
		b = appendArray(b, r.tools, r.external)
	}
	if r.stream {
		b = append(b, `,"stream":true`...)
	}
	return append(b, '}')
}

// appendArray appends a JSON array of the values of both lists.
func appendArray(b []byte, first, second []json.RawMessage) []byte {
	b = append(b, '[')
	for i, v := range first {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, v...)
	}
	for i, v := range second {
		if i > 0 || len(first) > 0 {
			b = append(b, ',')
		}
		b = append(b, v...)
	}
	return append(b, ']')
}

// encodeHead encodes a request's parameters, messages and tools left out,
// as a JSON object without its closing brace. A streamed request asks for
// usage unless the parameters say otherwise.
func encodeHead(p *openai.ChatCompletionNewParams, stream bool) ([]byte, error) {
	q := *p
	q.Messages, q.Tools = nil, nil
	if stream && !q.StreamOptions.IncludeUsage.Valid() {
		q.StreamOptions.IncludeUsage = openai.Bool(true)
	}
	b, err := q.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("robby: chat completion: encoding the parameters: %w", err)
	}
	if len(b) < 2 || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("robby: chat completion: parameters encoded as %s, not an object", b)
	}
	return b[:len(b)-1], nil
}

// encodeMessages encodes the messages from raw's length on, appending them
// to raw.
func encodeMessages(raw []json.RawMessage, msgs []openai.ChatCompletionMessageParamUnion) ([]json.RawMessage, error) {
	for i := len(raw); i < len(msgs); i++ {
		b, err := msgs[i].MarshalJSON()
		if err != nil {
			return raw, fmt.Errorf("robby: chat completion: encoding message %d: %w", i, err)
		}
		raw = append(raw, b)
	}
	return raw, nil
}

// encodeTools encodes tool definitions, one value each.
func encodeTools(tools []openai.ChatCompletionToolUnionParam) ([]json.RawMessage, error) {
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
