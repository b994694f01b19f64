// Package httpapi holds what robby's HTTP endpoints (openaiserver, uistream,
// agui) share. That is the bearer-token and CORS check before every route, and
// errors in OpenAI's JSON shape. It also holds bounded JSON bodies, the
// headers of an event stream, and the defaults of the options they all take
// ([Shared]).
package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/robby-go/robby/internal/randid"
)

// A Guard admits the requests of a set of bearer tokens, from browsers of
// a set of web origins. It is safe for concurrent use.
type Guard struct {
	users   map[[sha256.Size]byte]string // each token's user, by the token's hash
	origins []string                     // the web origins (or "*") whose pages may call
}

// NewGuard returns the guard of tokens, which map each bearer token to the
// user it authenticates, and of origins, the web origins (or "*") whose
// pages may call. With no tokens, every request is of the user "". The
// guard keeps the tokens' hashes, not the tokens, and a copy of origins.
func NewGuard(tokens map[string]string, origins []string) *Guard {
	g := &Guard{origins: slices.Clone(origins)}
	if len(tokens) > 0 {
		g.users = make(map[[sha256.Size]byte]string, len(tokens))
		for token, user := range tokens {
			g.users[sha256.Sum256([]byte(token))] = user
		}
	}
	return g
}

// Admit gives the request its X-Request-Id, and checks its origin and token. It
// returns the request with its user in its context ([User]). When it returns
// false, the request has been answered. It was a preflight (204), a foreign
// origin (403) or a missing token (401).
func (g *Guard) Admit(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	w.Header().Set("X-Request-Id", "req_"+randid.Alnum(24))
	if origin := r.Header.Get("Origin"); origin != "" && !g.sameOrigin(r, origin) {
		if !g.allowOrigin(w, r, origin) {
			return r, false
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			w.WriteHeader(http.StatusNoContent) // a preflight, answered without a token
			return r, false
		}
	}
	user, ok := g.Authenticate(r.Header.Get("Authorization"))
	if !ok {
		WriteError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "",
			"Missing or incorrect bearer token.")
		return r, false
	}
	return r.WithContext(context.WithValue(r.Context(), userKey{}, user)), true
}

// userKey is the context key of the user a request authenticated as.
type userKey struct{}

// User returns the user an admitted request authenticated as.
func User(r *http.Request) string {
	user, _ := r.Context().Value(userKey{}).(string)
	return user
}

// Authenticate returns the user whose token an Authorization header carries,
// and false if it carries none of g's. The scheme's name is case-insensitive
// (RFC 9110, section 11.1).
func (g *Guard) Authenticate(header string) (string, bool) {
	if len(g.users) == 0 {
		return "", true
	}
	scheme, got, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return g.User(strings.TrimLeft(got, " "))
}

// User returns the user of a bearer token, and false if it is none of g's.
// The token is found by its SHA-256 hash, in the same time however many
// tokens there are. That time tells an attacker nothing of a token but its
// hash, which does not lead to it.
func (g *Guard) User(token string) (string, bool) {
	var buf [128]byte // on the stack: a usual token is hashed without an allocation
	user, found := g.users[sha256.Sum256(append(buf[:0], token...))]
	return user, found
}

// sameOrigin reports whether a browser's request comes from a page of the
// server itself. Such a page, as robby serve's chat page, needs no CORS
// permission. Without tokens the host must be an IP address or localhost. An
// attacker may point a DNS name at a loopback server (DNS rebinding). As far as
// the browser can tell, that name's page is of the same origin.
func (g *Guard) sameOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host != r.Host || u.Scheme != "http" && u.Scheme != "https" {
		return false
	}
	if len(g.users) > 0 {
		return true
	}
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	return host == "localhost" || net.ParseIP(strings.Trim(host, "[]")) != nil
}

// allowOrigin gives a browser of a listed origin CORS permission, or
// answers 403 and returns false.
func (g *Guard) allowOrigin(w http.ResponseWriter, r *http.Request, origin string) bool {
	hd := w.Header()
	hd.Add("Vary", "Origin")
	if !slices.Contains(g.origins, origin) && !slices.Contains(g.origins, "*") {
		WriteError(w, http.StatusForbidden, "invalid_request_error", "origin_not_allowed", "",
			fmt.Sprintf("Requests from the web origin %q are not allowed: the server's operator can list it (robby serve -cors).", origin))
		return false
	}
	hd.Set("Access-Control-Allow-Origin", origin)
	if r.Method == http.MethodOptions {
		hd.Set("Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE")
		if asked := r.Header.Get("Access-Control-Request-Headers"); asked != "" {
			hd.Set("Access-Control-Allow-Headers", asked)
		}
		hd.Set("Access-Control-Max-Age", "600")
		hd.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
	}
	return true
}

// ErrorBody is an error in OpenAI's shape. It is the member "error" of an error
// answer or of an error event in a stream.
type ErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// WriteError writes an error in OpenAI's shape; code and param may be
// empty.
func WriteError(w http.ResponseWriter, status int, typ, code, param, msg string) {
	e := ErrorBody{Message: msg, Type: typ}
	if code != "" {
		e.Code = &code
	}
	if param != "" {
		e.Param = &param
	}
	WriteJSON(w, status, map[string]any{"error": e})
}

// WriteJSON writes v as a JSON answer.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// readBody reads a request's body, of at most limit bytes, into a buffer of the
// size it announces. A body announced too large is not read.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 {
		buf.Grow(int(n) + 1) // +1: the read that sees the end
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	return buf.Bytes(), err
}

// IsJSON reports whether a Content-Type says JSON.
func IsJSON(contentType string) bool {
	t, _, err := mime.ParseMediaType(contentType)
	return err == nil && t == "application/json"
}

// ReadJSON reads the body of a request that says it is JSON, of at most limit
// bytes. Otherwise it answers the error (415, 413, 400) and returns false. A
// web page can post a form to any address, but not JSON. Bytes that are not
// UTF-8 read as U+FFFD, and so do escaped surrogates without their other half
// (\ud800).
func ReadJSON(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	if !IsJSON(r.Header.Get("Content-Type")) {
		WriteError(w, http.StatusUnsupportedMediaType, "invalid_request_error", "unsupported_media_type", "",
			"The request body must be JSON, sent with Content-Type: application/json.")
		return nil, false
	}
	body, err := readBody(w, r, limit)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			WriteError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", "",
				fmt.Sprintf("Request body is larger than %d bytes.", tooBig.Limit))
			return nil, false
		}
		WriteError(w, http.StatusBadRequest, "invalid_request_error", "", "", "Could not read the request body: "+err.Error())
		return nil, false
	}
	if !utf8.Valid(body) {
		// As encoding/json reads them. The decoders that keep the body's bytes,
		// and send them upstream as they came, see valid UTF-8.
		body = bytes.ToValidUTF8(body, []byte("\uFFFD"))
	}
	replaceLoneSurrogates(body)
	return body, true
}

// replaceLoneSurrogates writes \ufffd, in place, over each escaped surrogate
// of a JSON body that is not half of a pair, as encoding/json reads it. Sent
// upstream as it came, \ud800 stands for no character: a server may refuse
// the request, or keep text that is not UTF-8. In valid JSON a backslash is
// always in a string, so the body is scanned from escape to escape.
func replaceLoneSurrogates(b []byte) {
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 || i+j+1 >= len(b) {
			return
		}
		i += j
		if b[i+1] != 'u' {
			i += 2 // \\ or \" or \n: the next byte is not an escape
			continue
		}
		r, ok := escapedRune(b[i:])
		switch {
		case !ok:
			return // not JSON: the decoder says so
		case !utf16.IsSurrogate(r):
		case r < 0xdc00 && isLowSurrogate(b[i+6:]):
			i += 6 // the pair's high half; its low half is skipped next
		default:
			copy(b[i+2:i+6], "fffd")
		}
		i += 6
	}
}

// escapedRune reads the code unit of a \uXXXX escape at the start of b.
func escapedRune(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// isLowSurrogate reports whether b starts with an escaped low surrogate.
func isLowSurrogate(b []byte) bool {
	r, ok := escapedRune(b)
	return ok && r >= 0xdc00 && r <= 0xdfff
}

// StartSSE writes the headers of an event stream, and more: extra
// headers may be set on w before.
func StartSSE(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // no proxy buffering
	w.WriteHeader(http.StatusOK)
}

// GuardCode is the code of the OpenAI-shaped error of a run a guard blocked.
const GuardCode = "guardrail_blocked"

// Blocked returns what a client reads of a run a guard blocked (a G in
// err's chain, robby's *GuardError), and whether one did. It names the guard
// and the boundary, and gives the guard's message: never the text withheld.
func Blocked[G error](err error) (string, bool) {
	g, ok := errors.AsType[G](err)
	if !ok {
		return "", false
	}
	return "The server's " + strings.TrimPrefix(g.Error(), "robby: "), true
}

// UpstreamError returns the status and message that tell a client why a run
// failed. The model endpoint's own error, an E in err's chain, is passed on,
// with the status and message that of reads (of robby's *APIError). Any other
// failure (the endpoint unreachable, a reply robby could not read) is reported
// by request id only. Its text names addresses the client has no business
// knowing.
func UpstreamError[E error](err error, requestID string, of func(E) (status int, msg string)) (int, string) {
	if apiErr, ok := errors.AsType[E](err); ok {
		status, msg := of(apiErr)
		if status < 400 {
			status = http.StatusBadGateway // 0: an error sent inside a stream
		}
		return status, "upstream: " + msg
	}
	return http.StatusBadGateway,
		fmt.Sprintf("The agent could not get an answer from its model (request id %s); the server's log has the details.", requestID)
}
