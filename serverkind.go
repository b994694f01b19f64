package robby

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3/option"
)

// A serverKind is the software behind an OpenAI-compatible endpoint, as
// far as robby needs to know it.
type serverKind int

const (
	serverOther    serverKind = iota // a hosted API, a proxy, or unknown
	serverLlamaCpp                   // llama.cpp's llama-server
	serverOllama
	serverVLLM
)

var serverKindNames = [...]string{"other", "llama.cpp", "ollama", "vllm"}

func (k serverKind) String() string { return serverKindNames[k] }

// grammarBound reports whether the server turns response_format's schema
// into a grammar over the whole reply, tools or not: a model given both
// can then only write the answer, never a tool call. llama.cpp (outside the
// few chat templates it has a mixed grammar for), Ollama and vLLM do;
// OpenAI and Gemini constrain the final text only.
func (k serverKind) grammarBound() bool { return k != serverOther }

// serverInfo is what robby learned of the endpoint's server.
type serverInfo struct {
	kind   serverKind
	window int // the context window the server runs the model with; 0 if it does not say
}

// server returns what the endpoint's server says of itself, asked once in
// the agent's life: llama.cpp answers GET /props, Ollama GET /api/version
// and vLLM GET /version, at the server's root; other servers answer 404.
func (c *core) server(ctx context.Context) serverInfo {
	c.probe.Do(func() { c.srv = c.probeServer(ctx) })
	return c.srv
}

func (c *core) probeServer(ctx context.Context) serverInfo {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var props struct {
		Settings *struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
		NCtx int `json:"n_ctx"` // before llama.cpp b4000 or so
	}
	if c.getJSON(ctx, "props", &props) && props.Settings != nil {
		info := serverInfo{kind: serverLlamaCpp, window: max(props.NCtx, props.Settings.NCtx)}
		c.log.DebugContext(ctx, "robby: the server is llama.cpp", "n_ctx", info.window)
		return info
	}
	for _, s := range []struct {
		path string
		kind serverKind
	}{{"api/version", serverOllama}, {"version", serverVLLM}} {
		var version struct {
			Version string `json:"version"`
		}
		if c.getJSON(ctx, s.path, &version) && version.Version != "" {
			c.log.DebugContext(ctx, "robby: the server is "+s.kind.String(), "version", version.Version)
			return serverInfo{kind: s.kind}
		}
	}
	return serverInfo{}
}

// getJSON asks the server's root for path and decodes its JSON answer into
// v, once, without retries; false if it could not.
func (c *core) getJSON(ctx context.Context, path string, v any) bool {
	var body []byte // decoded here: servers differ in the Content-Type they send
	return c.client.Get(ctx, path, nil, &body, c.probeOptions()...) == nil && json.Unmarshal(body, v) == nil
}

// probeOptions are the request options of the requests asking the server
// about itself: the agent's, without retries, sent to the server's root.
func (c *core) probeOptions() []option.RequestOption {
	return append(c.reqOpts[:len(c.reqOpts):len(c.reqOpts)], option.WithMaxRetries(0), option.WithMiddleware(serverRoot))
}

// serverRoot sends the requests asking the server about itself to its
// root, where llama.cpp, Ollama and vLLM answer them, rather than under
// /v1.
func serverRoot(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	for _, p := range [...]string{"/props", "/api/show", "/api/version", "/version"} {
		if strings.HasSuffix(req.URL.Path, "/v1"+p) {
			req.URL.Path = strings.TrimSuffix(req.URL.Path, "/v1"+p) + p
			break
		}
	}
	return next(req)
}
