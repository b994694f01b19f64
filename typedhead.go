package robby

import (
	"sync"

	"github.com/robby-go/robby/internal/schemas"

	"github.com/openai/openai-go/v3"
)

// maxTypedHeads bounds typedHeads: [WithAnswerSchema] makes a schema a
// call, so a program giving schemas that way would grow it without end.
const maxTypedHeads = 64

// typedHeads caches the parameters of a typed run's request in native
// mode, the agent's with the response_format of an answer schema, and
// their head, per schema and streaming: laying the schema over the
// agent's parameters (1.2 KB) and encoding it anew cost each answer more
// than the rest of its request. Safe for concurrent use.
type typedHeads struct {
	mu    sync.Mutex
	heads map[typedHeadKey]typedHead
}

type typedHead struct {
	head   []byte
	params *openai.ChatCompletionNewParams
}

type typedHeadKey struct {
	schema *schemas.Answer
	stream bool
}

// get returns the agent's parameters base with the response_format of
// as, and their head. Both are shared: request bodies copy the head, and
// nothing writes to the parameters.
func (t *typedHeads) get(as *schemas.Answer, base *openai.ChatCompletionNewParams, stream bool) ([]byte, *openai.ChatCompletionNewParams, error) {
	key := typedHeadKey{as, stream}
	t.mu.Lock()
	h, ok := t.heads[key]
	t.mu.Unlock()
	if ok {
		return h.head, h.params, nil
	}
	p := *base
	p.ResponseFormat = as.ResponseFormat()
	head, err := encodeHead(&p, stream)
	if err != nil {
		return nil, nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.heads == nil {
		t.heads = make(map[typedHeadKey]typedHead)
	}
	if len(t.heads) < maxTypedHeads {
		t.heads[key] = typedHead{head, &p}
	}
	return head, &p, nil
}
