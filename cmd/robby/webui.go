package main

import (
	"embed"
	"io/fs"
	"net/http"
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

// pageHandler serves the chat page at / and its files under /assets/.
func pageHandler() http.Handler {
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
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", pagePolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		mux.ServeHTTP(w, r)
	})
}
