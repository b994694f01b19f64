package robby

import (
	"encoding/json"
	"slices"

	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby/internal/tokens"
)

// messages are messages with the JSON of the first len(raw) of them, so
// that each is encoded once in a conversation's life.
type messages struct {
	list []openai.ChatCompletionMessageParamUnion
	raw  []json.RawMessage // raw[i] encodes list[i]
	tok  []int             // tok[i] estimates the tokens of raw[i], for compaction
}

// add appends m, with raw as its JSON when every message before it has its
// own, nil meaning not encoded yet.
func (ms *messages) add(m openai.ChatCompletionMessageParamUnion, raw json.RawMessage) {
	if raw != nil && len(ms.raw) == len(ms.list) {
		ms.raw = append(ms.raw, raw)
	}
	ms.list = append(ms.list, m)
}

// addAll appends other, with the JSON it has.
func (ms *messages) addAll(other messages) {
	if len(ms.raw) == len(ms.list) {
		ms.raw = append(ms.raw, other.raw...)
	}
	ms.list = append(ms.list, other.list...)
}

// encoded returns the JSON of every message, encoding those that have none
// yet. The slice shares no writable memory with ms.
func (ms *messages) encoded() ([]json.RawMessage, error) {
	raw, err := encodeMessages(ms.raw, ms.list)
	ms.raw = raw
	return raw[:len(raw):len(raw)], err
}

// tokens returns the estimated tokens of the first n encoded messages,
// counting those not counted yet.
func (ms *messages) tokens(n int) []int {
	for i := len(ms.tok); i < n; i++ {
		ms.tok = append(ms.tok, tokens.Count(ms.raw[i]))
	}
	return ms.tok
}

func (ms messages) clone() messages {
	return messages{list: slices.Clone(ms.list), raw: slices.Clone(ms.raw), tok: slices.Clone(ms.tok)}
}
