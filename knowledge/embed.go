package knowledge

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// An Embedder turns texts into vectors. The vectors of one Embedder must
// all have the same length. Implementations must be safe for concurrent
// use.
type Embedder interface {
	// Model names the embedding model. Vectors are cached under it, so a change
	// of model re-embeds and a re-index does not.
	Model() string
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// DefaultEmbedBatch is how many texts an [OpenAIEmbedder] sends per request.
const DefaultEmbedBatch = 64

// maxBatchBytes bounds the text of one request. Endpoints limit the tokens of a
// batch (OpenAI: 300,000), and local servers their context.
const maxBatchBytes = 256 << 10

// An OpenAIEmbedder gets vectors from an OpenAI-compatible /v1/embeddings
// endpoint. Such are OpenAI, Ollama, llama.cpp's server with --embeddings,
// Docker Model Runner and vLLM. It goes through openai-go, which retries 408,
// 409, 429 and 5xx answers. It sends texts in batches. It is safe for
// concurrent use.
type OpenAIEmbedder struct {
	client openai.Client
	model  string
	batch  int
}

// NewOpenAIEmbedder returns an embedder for model. opts are openai-go's.
// option.WithBaseURL and option.WithAPIKey choose the endpoint (by default
// OPENAI_BASE_URL and OPENAI_API_KEY, as for any openai-go client).
// option.WithMaxRetries sets the retries (default 2).
func NewOpenAIEmbedder(model string, opts ...option.RequestOption) *OpenAIEmbedder {
	return &OpenAIEmbedder{client: openai.NewClient(opts...), model: model, batch: DefaultEmbedBatch}
}

// Model returns the model name given to NewOpenAIEmbedder.
func (e *OpenAIEmbedder) Model() string { return e.model }

// Embed sends texts in batches and returns their vectors, in order.
func (e *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for len(texts) > 0 {
		n, size := 0, 0
		for n < len(texts) && n < e.batch && (n == 0 || size+len(texts[n]) <= maxBatchBytes) {
			size += len(texts[n])
			n++
		}
		vecs, err := e.embedBatch(ctx, texts[:n])
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
		texts = texts[n:]
	}
	return out, nil
}

func (e *OpenAIEmbedder) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	res, err := e.client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model:          e.model,
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
	})
	if err != nil {
		return nil, fmt.Errorf("knowledge: embeddings: %w", err)
	}
	if len(res.Data) != len(texts) {
		return nil, fmt.Errorf("knowledge: embeddings: %d vectors for %d texts", len(res.Data), len(texts))
	}
	vecs := make([][]float32, len(texts))
	for _, d := range res.Data {
		if d.Index < 0 || int(d.Index) >= len(texts) || vecs[d.Index] != nil {
			return nil, fmt.Errorf("knowledge: embeddings: bad index %d", d.Index)
		}
		v := make([]float32, len(d.Embedding))
		for i, x := range d.Embedding {
			v[i] = float32(x)
		}
		vecs[d.Index] = v
	}
	return vecs, nil
}

// ErrDimensions reports vectors whose length differs from the others of
// the same model.
var ErrDimensions = errors.New("knowledge: embedding dimensions differ")

// normalize scales v to length 1, so that a dot product is the cosine
// similarity. A zero vector stays zero.
func normalize(v []float32) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
}
