// Package endpoint is what the examples that talk to a real model share. It
// reads the endpoint and model the environment chooses. When no model server
// answered, its report of the failure says how to start one.
package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
)

// Docker Model Runner's endpoint, for programs on the host, and its model.
const (
	defaultBaseURL = "http://localhost:12434/engines/v1"
	defaultModel   = "ai/qwen2.5"
)

// BaseURL returns OPENAI_BASE_URL, or Docker Model Runner's endpoint.
func BaseURL() string { return getenv("OPENAI_BASE_URL", defaultBaseURL) }

// Model returns ROBBY_MODEL, or Docker Model Runner's ai/qwen2.5.
func Model() string { return getenv("ROBBY_MODEL", defaultModel) }

func getenv(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// Report prints err on one line. When nothing answered at [BaseURL], it
// says how to start a model server instead.
func Report(err error) {
	var (
		urlErr *url.Error
		netErr *net.OpError
	)
	switch {
	case errors.Is(err, context.Canceled): // Ctrl-C
		fmt.Fprintln(os.Stderr, "interrupted")
	case errors.As(err, &netErr) || errors.As(err, &urlErr):
		// Not an answer from the endpoint (that would be a *robby.APIError)
		// but a connection that failed: refused, timed out, unknown host.
		var reason error = urlErr
		if netErr != nil {
			reason = netErr
		}
		fmt.Fprintf(os.Stderr, "no model answered at %s (%v). Start Docker Model Runner: "+
			"`docker desktop enable model-runner --tcp 12434 && docker model pull ai/qwen2.5`; "+
			"or use Ollama: OPENAI_BASE_URL=http://localhost:11434/v1 ROBBY_MODEL=qwen2.5; "+
			"or OpenAI: OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=... ROBBY_MODEL=gpt-4o-mini\n",
			BaseURL(), reason)
	default:
		// The endpoint answered with an error, such as an unknown model
		// (a *robby.APIError), or the options were wrong.
		fmt.Fprintln(os.Stderr, err)
	}
}
