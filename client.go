package robby

import (
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robby-go/robby/internal/chatwire"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// defaultHTTPClient is shared by the agents built without [WithClient]. So
// agents created one after another reuse connections. As openai-go does for
// its own default, it bounds the wait for response headers, not the stream
// that follows. It keeps up to maxIdleConns idle connections, not Go's
// default of 2 a host. So conversations in flight together find theirs again
// turn after turn, instead of opening new ones.
var defaultHTTPClient = sync.OnceValue(func() *http.Client {
	return &http.Client{Transport: pooledTransport(10 * time.Minute)}
})

// defaultMCPClient is shared by the MCP servers over HTTP given no client
// of their own ([MCPServer.WithHTTPClient]). It keeps idle connections as
// defaultHTTPClient does, so concurrent tool calls do not dial anew. It
// bounds no wait: a server may answer a long call only once it ends.
var defaultMCPClient = sync.OnceValue(func() *http.Client {
	return &http.Client{Transport: pooledTransport(0)}
})

// pooledTransport is Go's default transport keeping up to maxIdleConns idle
// connections, with the wait for response headers bounded by headers
// (0: unbounded).
func pooledTransport(headers time.Duration) http.RoundTripper {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t = t.Clone()
	t.ResponseHeaderTimeout = headers
	t.MaxIdleConns, t.MaxIdleConnsPerHost = maxIdleConns, maxIdleConns
	return t
}

// maxIdleConns bounds the idle connections of the default transport. Each
// costs some 10 KB and closes after 90 s unused.
const maxIdleConns = 1024

// sharedClient is the openai-go client of the agents built without
// [WithClient], kept with the environment it was built from. openai.NewClient
// builds a service for every OpenAI API, at hundreds of allocations. Agents
// only post chat completions, and set their base URL and key per request. So
// agents share one client, built again when the OPENAI_* variables it reads
// change.
var sharedClient atomic.Pointer[envClient]

type envClient struct {
	env    string
	client openai.Client
}

// openaiEnv are the variables openai.NewClient reads. See
// openai.DefaultClientOptions.
var openaiEnv = [...]string{"OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "OPENAI_ORG_ID",
	"OPENAI_PROJECT_ID", "OPENAI_WEBHOOK_SECRET", "OPENAI_CUSTOM_HEADERS"}

func defaultClient() openai.Client {
	var env strings.Builder
	for _, k := range openaiEnv {
		if v, ok := os.LookupEnv(k); ok {
			env.WriteByte(1)
			env.WriteString(v)
		}
		env.WriteByte(0) // no variable holds it
	}
	if c := sharedClient.Load(); c != nil && c.env == env.String() {
		return c.client
	}
	c := &envClient{env: env.String(), client: openai.NewClient(option.WithHTTPClient(defaultHTTPClient()))}
	sharedClient.Store(c)
	return c.client
}

func requestOptions(cfg *config) []option.RequestOption {
	var opts []option.RequestOption
	if cfg.baseURL != nil {
		opts = append(opts, option.WithBaseURL(*cfg.baseURL))
	}
	if cfg.apiKey != nil {
		opts = append(opts, option.WithAPIKey(*cfg.apiKey))
	}
	opts = append(opts, cfg.requestOptions...)
	// Requests go out through Client.Post. It would fall back on an admin key
	// (OPENAI_ADMIN_KEY) when no API key is set. Chat completions never take
	// one.
	opts = append(opts, option.WithAdminAPIKey(""), option.WithMiddleware(chatwire.CaptureErrors))
	if cfg.telemetry != nil {
		opts = append(opts, option.WithMiddleware(cfg.telemetry.middleware))
	}
	return opts
}
