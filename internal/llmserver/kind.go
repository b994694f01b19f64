// Package llmserver knows the servers behind OpenAI-compatible endpoints. It
// tells which software answers (llama.cpp, Ollama, vLLM). It finds the context
// window a model runs with, from a provider's errors, a server's own answers,
// or a table of well-known models.
package llmserver

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3/option"
)

// A Kind is the software behind an OpenAI-compatible endpoint, as far as
// robby needs to know it.
type Kind int

// The kinds robby tells apart.
const (
	Other    Kind = iota // a hosted API, a proxy, or unknown
	LlamaCpp             // llama.cpp's llama-server
	Ollama
	VLLM
)

var kindNames = [...]string{"other", "llama.cpp", "ollama", "vllm"}

func (k Kind) String() string { return kindNames[k] }

// GrammarBound reports whether the server turns response_format's schema into a
// grammar over the whole reply, tools or not. A model given both can then only
// write the answer, never a tool call. llama.cpp (outside a few chat
// templates), Ollama and vLLM do. OpenAI and Gemini constrain the final text
// only.
func (k Kind) GrammarBound() bool { return k != Other }

// Info is what robby learned of the endpoint's server.
type Info struct {
	Kind   Kind
	Window int // the context window the server runs the model with ([Sane]); 0 if it does not say
}

// A Getter asks the server's root for path and decodes its JSON answer into v,
// once, without retries. It returns false if it could not.
type Getter func(ctx context.Context, path string, v any) bool

// Probe asks the server what it is. At the server's root, llama.cpp answers GET
// /props, Ollama GET /api/version and vLLM GET /version. Other servers answer
// 404.
func Probe(ctx context.Context, get Getter, log *slog.Logger) Info {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var props struct {
		Settings *struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
		NCtx int `json:"n_ctx"` // before llama.cpp b4000 or so
	}
	if get(ctx, "props", &props) && props.Settings != nil {
		info := Info{Kind: LlamaCpp, Window: Sane(max(props.NCtx, props.Settings.NCtx))}
		log.DebugContext(ctx, "robby: the server is llama.cpp", "n_ctx", info.Window)
		return info
	}
	for _, s := range []struct {
		path string
		kind Kind
	}{{"api/version", Ollama}, {"version", VLLM}} {
		var version struct {
			Version string `json:"version"`
		}
		if get(ctx, s.path, &version) && version.Version != "" {
			log.DebugContext(ctx, "robby: the server is "+s.kind.String(), "version", version.Version)
			return Info{Kind: s.kind}
		}
	}
	return Info{}
}

// ToRoot is an openai-go middleware sending the requests that ask the server
// about itself to its root. llama.cpp, Ollama and vLLM answer them there, not
// under /v1.
func ToRoot(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	for _, p := range [...]string{"/props", "/api/show", "/api/version", "/version"} {
		if strings.HasSuffix(req.URL.Path, "/v1"+p) {
			req.URL.Path = strings.TrimSuffix(req.URL.Path, "/v1"+p) + p
			break
		}
	}
	return next(req)
}
