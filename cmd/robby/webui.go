package main

import (
	"embed"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/chattext"
	"github.com/robby-go/robby/internal/httpapi"
)

// web holds the chat page and its vendored libraries (web/vendor/README.md
// says which, at which versions): nothing is fetched from elsewhere, so the
// page works on a machine without a network.
//
//go:embed web
var web embed.FS

// pagePolicy is the page's Content-Security-Policy. Scripts come from the
// page's own files only (no inline script, no eval). Requests go to its own
// origin only. No images come from elsewhere: a model's answer could otherwise
// send the conversation to any address in an image's URL.
const pagePolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// maxPromptArgsBytes bounds the body of a request for a prompt: its
// arguments.
const maxPromptArgsBytes = 64 << 10

// pageHandler serves the chat page at / and its files under /assets/. The
// page needs no token: it holds no data. It also serves the MCP servers'
// prompts, which an empty chat offers as starters, under /api/prompts; those
// take the API's tokens and origins, as guard checks.
func pageHandler(agent *robby.Agent, guard *httpapi.Guard, logger *slog.Logger) http.Handler {
	sub, err := fs.Sub(web, "web")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix("/assets/", http.FileServerFS(sub))
	mux := http.NewServeMux()
	mux.Handle("GET /assets/", files)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, sub, "index.html")
	})
	p := promptRoutes{agent: agent, logger: logger}
	mux.Handle("/api/prompts", guarded(guard, http.HandlerFunc(p.list)))
	mux.Handle("/api/prompts/", guarded(guard, http.HandlerFunc(p.get)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", pagePolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		mux.ServeHTTP(w, r)
	})
}

// guarded checks a request's origin and token before next.
func guarded(guard *httpapi.Guard, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r, ok := guard.Admit(w, r); ok {
			next.ServeHTTP(w, r)
		}
	})
}

// promptRoutes serve the MCP servers' prompts to the page.
type promptRoutes struct {
	agent  *robby.Agent
	logger *slog.Logger
}

// wirePrompt is a prompt as GET /api/prompts lists it.
type wirePrompt struct {
	Server string `json:"server"`
	*mcp.Prompt
}

// list answers GET /api/prompts: {"data": [prompt...]}, each with its
// server, name, title, description and arguments.
func (p promptRoutes) list(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		httpapi.WriteError(w, http.StatusMethodNotAllowed, "invalid_request_error", "", "", "GET /api/prompts lists the prompts.")
		return
	}
	prompts, err := p.agent.MCPPrompts(r.Context())
	if err != nil {
		// The prompts listed before the failing server are still offered.
		p.logger.WarnContext(r.Context(), "robby: listing MCP prompts", slog.String("request_id", w.Header().Get("X-Request-Id")), slog.Any("error", err))
	}
	out := struct {
		Data []wirePrompt `json:"data"`
	}{Data: make([]wirePrompt, len(prompts))}
	for i, pr := range prompts {
		out.Data[i] = wirePrompt{Server: pr.Server, Prompt: pr.Prompt}
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// get answers POST /api/prompts/{server}/{name}, whose body is
// {"arguments": {...}}: the prompt's messages, filled in, as {"text"}.
// The page puts that text in its composer, for the user to read and send.
func (p promptRoutes) get(w http.ResponseWriter, r *http.Request) {
	server, name, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/api/prompts/"), "/")
	if r.Method != http.MethodPost || !ok || server == "" || name == "" {
		httpapi.WriteError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "",
			"POST /api/prompts/{server}/{name} gets a prompt.")
		return
	}
	body, ok := httpapi.ReadJSON(w, r, maxPromptArgsBytes)
	if !ok {
		return
	}
	var in struct {
		Arguments map[string]string `json:"arguments"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", "",
			"The body must be {\"arguments\": {name: text}}: "+err.Error())
		return
	}
	msgs, err := p.agent.MCPPrompt(r.Context(), server, name, in.Arguments)
	if err != nil {
		// The error is the MCP server's (a missing argument, an unknown
		// prompt), its secrets masked by the agent.
		httpapi.WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", "", err.Error())
		return
	}
	texts := make([]string, 0, len(msgs))
	for _, m := range msgs {
		var cm chattext.Message
		b, _ := json.Marshal(m)
		if json.Unmarshal(b, &cm) == nil && strings.TrimSpace(cm.Text()) != "" {
			texts = append(texts, cm.Text())
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]string{"text": strings.Join(texts, "\n\n")})
}
