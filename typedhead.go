package robby

import (
	"sync"

	"github.com/openai/openai-go/v3"
)

// maxTypedHeads bounds typedHeads: [WithAnswerSchema] makes a schema a
// call, so a program giving schemas that way would grow it without end.
const maxTypedHeads = 64

// typedHeads caches the head of a typed run's request in native mode, the
// agent's parameters with the response_format of an answer schema, per
// schema and streaming: encoding the schema anew costs each answer more
// than the rest of its parameters. Safe for concurrent use.
type typedHeads struct {
	mu    sync.Mutex
	heads map[typedHeadKey][]byte
}

type typedHeadKey struct {
	schema *answerSchema
	stream bool
}

// get returns the head of p, the agent's parameters with the
// response_format of as; as nil (a run with parameters of its own) is not
// cached. Heads are shared: request bodies copy them.
func (t *typedHeads) get(as *answerSchema, p *openai.ChatCompletionNewParams, stream bool) ([]byte, error) {
	if as == nil {
		return encodeHead(p, stream)
	}
	key := typedHeadKey{as, stream}
	t.mu.Lock()
	head, ok := t.heads[key]
	t.mu.Unlock()
	if ok {
		return head, nil
	}
	head, err := encodeHead(p, stream)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.heads == nil {
		t.heads = make(map[typedHeadKey][]byte)
	}
	if len(t.heads) < maxTypedHeads {
		t.heads[key] = head
	}
	return head, nil
}
