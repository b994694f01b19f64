package mcpoauth

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"runtime"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// loopback is the default authorization-code fetcher. It sends the user to the
// authorization URL. It then waits for the authorization server's redirect on
// the loopback listener (RFC 8252 §7.3).
func (h *Handler) loopback(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(args.URL)
	if err != nil {
		return nil, fmt.Errorf("authorization URL: %w", err)
	}
	state := u.Query().Get("state")
	results := make(chan callback, 1)
	srv := &http.Server{Handler: callbackHandler(state, results), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(h.ln)
	defer srv.Close()

	if err := h.open(ctx, args.URL); err != nil {
		return nil, err
	}
	timer := time.NewTimer(h.cfg.timeout)
	defer timer.Stop()
	select {
	case r := <-results:
		if r.err != "" {
			return nil, fmt.Errorf("%w: %s", ErrDenied, r.describe())
		}
		return &auth.AuthorizationResult{Code: r.code, State: r.state, Iss: r.iss}, nil
	case <-timer.C:
		return nil, fmt.Errorf("%w (%s)", ErrTimeout, h.cfg.timeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// open sends the user to authURL with [WithOpenURL]'s function. Without one, it
// writes the URL to the prompt and opens the browser.
func (h *Handler) open(ctx context.Context, authURL string) error {
	if h.cfg.openURL != nil {
		if err := h.cfg.openURL(ctx, authURL); err != nil {
			return fmt.Errorf("opening the authorization URL: %w", err)
		}
		return nil
	}
	fmt.Fprintf(h.cfg.prompt, "Authorize robby to use the MCP server %s: open this URL in your browser if it does not open by itself:\n\n  %s\n\n", h.host, authURL)
	cmd := browserCommand(authURL)
	if err := cmd.Start(); err != nil {
		h.log.Info("mcpoauth: no browser opened", "error", err.Error())
		return nil // the URL is written: the user opens it
	}
	go cmd.Wait() // reaps the opener, which returns once the browser has the URL
	return nil
}

// browserCommand returns the command that opens u in the user's browser.
func browserCommand(u string) *exec.Cmd {
	switch runtime.GOOS {
	case "darwin":
		return exec.Command("open", u)
	case "windows":
		return exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	}
	return exec.Command("xdg-open", u)
}

// callback is what the authorization server's redirect brought.
type callback struct {
	code, state, iss string
	err, errDesc     string
}

func (c callback) describe() string {
	if c.errDesc != "" {
		return c.err + ": " + c.errDesc
	}
	return c.err
}

// callbackHandler answers the redirect to /callback. The first one that carries
// the expected state is sent on results. The others (another page's request to
// the port, a stale tab) are refused.
func callbackHandler(state string, results chan<- callback) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("state") != state || state == "" {
			http.Error(w, "This authorization response does not match the request robby made: state mismatch.", http.StatusBadRequest)
			return
		}
		c := callback{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss"),
			err: q.Get("error"), errDesc: q.Get("error_description")}
		if c.err == "" && c.code == "" {
			c.err = "the redirect has no code"
		}
		select {
		case results <- c:
		default: // answered already
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if c.err != "" {
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, "Authorization refused. You can close this window.\n")
			return
		}
		io.WriteString(w, "Authorization complete: robby has the code. You can close this window.\n")
	})
	return mux
}
