package chatwire

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/robby-go/robby/internal/jsonstream"

	"github.com/openai/openai-go/v3/packages/ssestream"
	sjson "github.com/segmentio/encoding/json"
)

// robby decodes responses and chunks itself, into the few fields it reads. It uses
// segmentio/encoding (already built in through the MCP SDK), imported as sjson wherever
// robby uses it on a hot path. encoding/json does the rest. openai-go's decoder keeps every
// field of every chunk with its raw JSON and metadata. That costs six times the time and
// twenty times the allocations of the chunk's own content.

// A Response is what robby reads of a chat.completion or of a
// chat.completion.chunk.
type Response struct {
	Choices []Choice `json:"choices"`
	Usage   *Usage   `json:"usage"`
	Timings Timings  `json:"timings"` // llama.cpp's
}

type Choice struct {
	Index        int64   `json:"index"`
	FinishReason Lenient `json:"finish_reason"`
	Message      Message `json:"message"` // in a chat.completion
	Delta        Message `json:"delta"`   // in a chunk
}

type Message struct {
	Content   Lenient `json:"content"`
	Refusal   Lenient `json:"refusal"`
	Reasoning Lenient `json:"reasoning"` // Ollama, OpenRouter, newer vLLM
	// DeepSeek, llama.cpp and older vLLM
	ReasoningContent Lenient    `json:"reasoning_content"`
	ToolCalls        []ToolCall `json:"tool_calls"`
}

// ReasoningText returns the reasoning of a message or delta, under either name.
func (m *Message) ReasoningText() string {
	if m.ReasoningContent != "" {
		return string(m.ReasoningContent)
	}
	return string(m.Reasoning)
}

type ToolCall struct {
	// Index is "" when the provider sent none. A number decoded as text, left in the chunk's
	// memory, costs no allocation where a *int64 would.
	Index    sjson.Number `json:"index"`
	ID       Lenient      `json:"id"`
	Type     Lenient      `json:"type"`
	Function struct {
		Name      Lenient   `json:"name"`
		Arguments arguments `json:"arguments"`
	} `json:"function"`
	Custom struct {
		Name Lenient `json:"name"`
	} `json:"custom"`
	Extra  map[string]any `json:"-"` // other fields, sent back with the call
	Pos    int64          `json:"-"` // Index read, when HasPos
	HasPos bool           `json:"-"`
}

// knownToolCallField reports whether a tool call's field is one robby reads. The others are
// the provider's own, such as Gemini's extra_content.
func knownToolCallField(name []byte) bool {
	switch string(name) {
	case "index", "id", "type", "function", "custom":
		return true
	}
	return false
}

// UnmarshalJSON decodes a tool call, keeping the fields robby does not know. Nearly every
// call has none, so it is decoded once refusing unknown fields. Only a call that has some is
// decoded again, with them.
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	type plain ToolCall // without this method
	if parseExact(b, (*plain)(c), sjson.DisallowUnknownFields|sjson.DontCopyNumber) != nil {
		*c = ToolCall{}
		if err := parseExact(b, (*plain)(c), sjson.DontCopyNumber); err != nil {
			return err
		}
		c.Extra = otherFields(b)
	}
	if c.Index == "" {
		return nil
	}
	i, err := c.Index.Int64()
	if err != nil {
		return fmt.Errorf("tool call index %s is not an integer", c.Index)
	}
	c.Pos, c.HasPos = i, true
	return nil
}

// otherFields returns the fields of a tool call robby does not know, null
// ones left out.
func otherFields(obj []byte) map[string]any {
	var fields map[string]sjson.RawMessage
	if sjson.Unmarshal(obj, &fields) != nil {
		return nil
	}
	var extra map[string]any
	for k, v := range fields {
		if k == "" || knownToolCallField([]byte(k)) || string(v) == "null" {
			continue
		}
		if extra == nil {
			extra = make(map[string]any)
		}
		extra[k] = sjson.RawMessage(slices.Clone(v))
	}
	return extra
}

// A Lenient is a string of the provider's JSON in which a value of another type reads as
// empty. openai-go reads it so, rather than failing the whole response. Some providers send
// content as an array of parts, or a reasoning object.
type Lenient string

// UnmarshalJSON implements [sjson.Unmarshaler].
func (s *Lenient) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '"' {
		*s = ""
		return nil
	}
	return sjson.Unmarshal(b, (*string)(s))
}

// arguments are a tool call's arguments. They are a string holding JSON, as the API defines
// them, or the JSON itself, as some servers send it. A string is decoded to the bytes it
// holds, invalid UTF-8 and lone surrogates kept. Fragments are joined before anything reads
// them as text.
type arguments string

// UnmarshalJSON implements [sjson.Unmarshaler].
func (a *arguments) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) == 0 || string(b) == "null":
		*a = ""
	case b[0] == '"':
		s, err := jsonstream.Unquote(b)
		*a = arguments(s)
		return err
	default:
		*a = arguments(b)
	}
	return nil
}

// DecodeResponse decodes a plain response's body.
func DecodeResponse(body []byte) (*Response, error) {
	var r Response
	if err := decodeExact(body, &r); err != nil {
		return nil, fmt.Errorf("decoding the response: %w", err)
	}
	return &r, nil
}

// DecodeChunk decodes the data of a streamed event. An event carrying an
// error is reported as openai-go reports it, as an [ssestream.StreamError].
func DecodeChunk(ev ssestream.Event, c *Response) error {
	if bytes.Contains(ev.Data, []byte(`"error"`)) {
		var probe struct {
			Error sjson.RawMessage `json:"error"`
		}
		if decodeExact(ev.Data, &probe) == nil && probe.Error != nil {
			return &ssestream.StreamError{Message: "received error while streaming: " + errorText(probe.Error), Event: ev}
		}
	}
	c.reset()
	if err := decodeExact(ev.Data, c); err != nil {
		return fmt.Errorf("decoding a chunk: %w", err)
	}
	return nil
}

// reset empties c for the next chunk, keeping its slices' memory. Otherwise a stream of
// small deltas would allocate room for ten choices and ten tool calls on every chunk. The
// decoder fills elements in place without zeroing them first. So those it wrote (one more
// after a failed decoding) are cleared here; the others are still zero.
func (c *Response) reset() {
	choices := c.Choices[:used(len(c.Choices), cap(c.Choices))]
	for i := range choices {
		calls := choices[i].Delta.ToolCalls
		clear(calls[:used(len(calls), cap(calls))])
		choices[i] = Choice{}
		choices[i].Delta.ToolCalls = calls[:0]
	}
	*c = Response{Choices: choices[:0]}
}

// used is how many elements of a slice the decoder may have written.
func used(n, capacity int) int { return min(n+1, capacity) }

// errorText returns an error value as text: a string's value, nothing for
// null, or the JSON of anything else.
func errorText(raw sjson.RawMessage) string {
	var text string
	switch {
	case string(raw) == "null":
		return ""
	case sjson.Unmarshal(raw, &text) == nil:
		return text
	}
	return string(raw)
}

// Usage is the usage of a response or chunk. The details are values,
// not pointers: decoding them costs no allocation.
type Usage struct {
	PromptTokens        Count `json:"prompt_tokens"`
	CompletionTokens    Count `json:"completion_tokens"`
	TotalTokens         Count `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens Count `json:"cached_tokens"`
	} `json:"prompt_tokens_details"` // OpenAI, vLLM, Gemini, newer llama.cpp
	CompletionTokensDetails struct {
		ReasoningTokens Count `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	PromptCacheHitTokens Count `json:"prompt_cache_hit_tokens"` // DeepSeek
}

// Timings is what robby reads of llama.cpp's timings: cache_n prompt
// tokens were read from its cache, prompt_n were evaluated.
type Timings struct {
	CacheN Count `json:"cache_n"`
}

// A Count is a token count as a provider sends it. It only informs, so a count that is no
// int64 (a fraction, a number too large, a string) does not fail the answer. A number reads
// as the nearest int64, anything else as 0. [Usage.clamped] then bounds it.
type Count int64

// UnmarshalJSON reads any JSON value, and never fails.
func (c *Count) UnmarshalJSON(b []byte) error {
	if len(b) <= 18 { // the usual count, read without allocating
		n := int64(0)
		for _, d := range b {
			if d < '0' || d > '9' {
				n = -1
				break
			}
			n = n*10 + int64(d-'0')
		}
		if n >= 0 && len(b) > 0 {
			*c = Count(n)
			return nil
		}
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		f, _ := strconv.ParseFloat(string(b), 64) // ±Inf beyond float64, 0 if no number
		switch {
		case math.IsNaN(f):
			n = 0
		case f >= math.MaxInt64:
			n = math.MaxInt64
		case f <= math.MinInt64:
			n = math.MinInt64
		default:
			n = int64(f)
		}
	}
	*c = Count(n)
	return nil
}

// decodeExact is sjson.Unmarshal reading struct fields by their exact names, as openai-go
// does. A provider field that differs from a known one only by case is the provider's own.
func decodeExact(b []byte, v any) error { return parseExact(b, v, 0) }

// parseExact is decodeExact with more flags.
func parseExact(b []byte, v any, flags sjson.ParseFlags) error {
	rest, err := sjson.Parse(b, v, flags|sjson.DontMatchCaseInsensitiveStructFields)
	if err == nil && len(rest) > 0 {
		return fmt.Errorf("invalid character %q after top-level value", rest[0])
	}
	return err
}
