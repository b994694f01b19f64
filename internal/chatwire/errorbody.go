package chatwire

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/openai/openai-go/v3/option"
	"github.com/robby-go/robby/internal/trunc"
)

// Capture records the last error response of a request. openai-go loses the
// message (or even the status) of bodies that are not OpenAI's error envelope.
type Capture struct {
	Status int
	Body   []byte
	Req    *http.Request
	Res    *http.Response
}

type captureKey struct{}

// maxErrorBody bounds how much of an error body is kept.
const maxErrorBody = 64 << 10

// CaptureErrors is an openai-go middleware that keeps a copy of every error
// body for the request's Capture. It gives openai-go the same bytes.
func CaptureErrors(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	c, _ := req.Context().Value(captureKey{}).(*Capture)
	if err != nil || c == nil || res.StatusCode < 400 {
		return res, err
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(body))
	c.Status, c.Body, c.Req, c.Res = res.StatusCode, body, req, res
	return res, nil
}

// WithCapture returns ctx with a new Capture, which CaptureErrors fills.
func WithCapture(ctx context.Context) (context.Context, *Capture) {
	c := &captureCtx{Context: ctx}
	return c, &c.capture
}

// A captureCtx is ctx with a request's Capture as a value: one allocation,
// where context.WithValue and a Capture are two.
type captureCtx struct {
	context.Context
	capture Capture
}

// Value returns the Capture for captureKey, the parent's values otherwise.
func (c *captureCtx) Value(key any) any {
	if key == (captureKey{}) {
		return &c.capture
	}
	return c.Context.Value(key)
}

var (
	htmlTitle = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
	htmlTag   = regexp.MustCompile(`(?s)<[^>]*>`)
	spaces    = regexp.MustCompile(`\s+`)
)

// MaxMessage bounds the length of a provider message kept in an error.
const MaxMessage = 500

// ProviderMessage finds the human-readable message in an error body. It reads
// OpenAI's {"error":{"message"}}, {"error":"text"}, and Gemini's array of
// those. It also reads Mistral's {"object":"error","message":...},
// {"detail":...}, an HTML page from a proxy, or plain text.
func ProviderMessage(body []byte) string {
	body = bytes.TrimSpace(body)
	var v any
	if json.Unmarshal(body, &v) == nil {
		if m := messageIn(v, 0); m != "" {
			return clip(m)
		}
	}
	text := string(body)
	if m := htmlTitle.FindStringSubmatch(text); m != nil {
		text = m[1]
	} else if strings.HasPrefix(text, "<") {
		text = htmlTag.ReplaceAllString(text, " ")
	}
	return clip(spaces.ReplaceAllString(html.UnescapeString(text), " "))
}

func messageIn(v any, depth int) string {
	if depth > 4 {
		return ""
	}
	switch v := v.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, e := range v {
			if m := messageIn(e, depth+1); m != "" {
				parts = append(parts, m)
			}
		}
		return strings.Join(parts, "; ")
	case map[string]any:
		for _, key := range []string{"error", "message", "detail", "msg"} {
			if m := messageIn(v[key], depth+1); m != "" {
				return m
			}
		}
	}
	return ""
}

func clip(s string) string {
	s = strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) > MaxMessage {
		return trunc.Excerpt(s, MaxMessage)
	}
	return s
}
