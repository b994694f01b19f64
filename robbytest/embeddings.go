package robbytest

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"strings"
	"unicode"
)

// EmbeddingDims is the length of the vectors the server's /v1/embeddings
// returns when the request does not ask for "dimensions".
const EmbeddingDims = 256

// Embedding is the deterministic embedding the server's /v1/embeddings endpoint
// computes. It takes the text's words: lower-cased runs of letters and digits.
// Each word, and each character trigram of the word framed as "<word>", is
// hashed with FNV-1a into one of dims coordinates. The hash also gives a sign,
// and words count twice as much as trigrams. The sum is scaled to length 1.
// Texts that share words or word parts are close, as a real model's would be
// for a lexical match. It knows no synonyms. A text with no word gives the zero
// vector.
func Embedding(text string, dims int) []float32 {
	v := make([]float32, dims)
	if dims <= 0 {
		return v
	}
	add := func(feature string, w float32) {
		h := fnv.New64a()
		h.Write([]byte(feature))
		x := h.Sum64()
		if x>>63 == 1 {
			w = -w
		}
		v[x%uint64(dims)] += w
	}
	for _, word := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	}) {
		add("w:"+word, 2)
		framed := []rune("<" + word + ">")
		for i := 0; i+3 <= len(framed); i++ {
			add(string(framed[i:i+3]), 1)
		}
	}
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum > 0 {
		inv := float32(1 / math.Sqrt(sum))
		for i := range v {
			v[i] *= inv
		}
	}
	return v
}

// Embeddings returns the inputs of each /v1/embeddings request received
// so far, oldest first.
func (s *Server) Embeddings() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]string(nil), s.embeddings...)
}

// serveEmbeddings answers POST /v1/embeddings as OpenAI does, with [Embedding]
// of each input. It writes floats or, when asked, base64 of little-endian
// float32s.
func (s *Server) serveEmbeddings(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Input          json.RawMessage `json:"input"`
		Model          string          `json:"model"`
		EncodingFormat string          `json:"encoding_format"`
		Dimensions     int             `json:"dimensions"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "robbytest: embeddings request body: "+err.Error())
		return
	}
	var inputs []string
	var one string
	if err := json.Unmarshal(body.Input, &one); err == nil {
		inputs = []string{one}
	} else if err := json.Unmarshal(body.Input, &inputs); err != nil {
		writeError(w, http.StatusBadRequest, "robbytest: input must be a string or an array of strings")
		return
	}
	if len(inputs) == 0 {
		writeError(w, http.StatusBadRequest, "robbytest: input must not be empty")
		return
	}
	for _, in := range inputs {
		if in == "" {
			writeError(w, http.StatusBadRequest, "robbytest: an input is an empty string")
			return
		}
	}
	if body.Model == "" {
		writeError(w, http.StatusBadRequest, "robbytest: model is required")
		return
	}
	s.mu.Lock()
	s.embeddings = append(s.embeddings, inputs)
	s.mu.Unlock()

	dims := EmbeddingDims
	if body.Dimensions > 0 {
		dims = body.Dimensions
	}
	type datum struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	data := make([]datum, len(inputs))
	tokens := 0
	for i, in := range inputs {
		v := Embedding(in, dims)
		tokens += len(strings.Fields(in))
		data[i] = datum{Object: "embedding", Index: i, Embedding: v}
		if body.EncodingFormat == "base64" {
			raw := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(x))
			}
			data[i].Embedding = base64.StdEncoding.EncodeToString(raw)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"object": "list", "data": data, "model": body.Model,
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens},
	})
}
