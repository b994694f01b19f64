package mcpoauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/robby-go/robby/internal/redact"
)

// Handler is an [auth.OAuthHandler] for one MCP server, to give to
// [robby.MCPServer.WithOAuth]. The go-sdk's streamable-HTTP transport asks it
// for a token before each request. When the server answers 401 or 403, the
// transport has it authorize, then retries once.
//
// A Handler is safe for concurrent use. One authorization runs at a time:
// requests refused together wait for it, and retry with its token.
type Handler struct {
	server string // the MCP server's URL, the key of its tokens in the store
	host   string // what messages and logs name the server by
	cfg    config
	log    *slog.Logger

	authMu sync.Mutex        // held while authorizing
	inner  auth.OAuthHandler // the go-sdk's, made at the first authorization
	ln     net.Listener      // the loopback redirect's, while authorizing
	port   int               // the loopback redirect's, once chosen
	want   []string          // the scopes the server's challenge asks for

	mu     sync.Mutex
	ts     oauth2.TokenSource
	loaded bool // the store was read

	known atomic.Pointer[[]string] // the secrets errors and logs must not show
}

var _ auth.OAuthHandler = (*Handler)(nil)

// ErrDenied is returned, wrapped, when the user or the authorization server
// refuses the authorization (an access_denied redirect, say).
var ErrDenied = errors.New("mcpoauth: authorization refused")

// ErrTimeout is returned, wrapped, when the user did not authorize within
// the time [WithAuthorizationTimeout] allows.
var ErrTimeout = errors.New("mcpoauth: timed out waiting for the authorization")

// New returns the handler of the MCP server at serverURL (its streamable
// HTTP endpoint). By default the user authorizes in the browser, through
// a client registered dynamically, and the tokens are kept in memory.
func New(serverURL string, opts ...Option) (*Handler, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("mcpoauth: the server URL must be an absolute http or https URL")
	}
	h := &Handler{server: serverURL, host: u.Host}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("mcpoauth: nil Option")
		}
		if err := o(&h.cfg); err != nil {
			h.cfg.errs = append(h.cfg.errs, err.Error())
		}
	}
	if err := h.cfg.check(); err != nil {
		return nil, err
	}
	h.port = h.cfg.callbackPort
	h.log = h.cfg.logger
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.learn(nil)
	h.log = redact.Logger(h.log, h.secrets).With(slog.String("mcp_server", h.host))
	if h.cfg.clientCredentials {
		h.inner, err = extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
			Credentials: &oauthex.ClientCredentials{ClientID: h.cfg.clientID,
				ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: h.cfg.clientSecret}},
			HTTPClient: h.cfg.httpClient,
		})
		if err != nil {
			return nil, fmt.Errorf("mcpoauth: %w", err)
		}
	}
	return h, nil
}

// check fills in the defaults and reports the options' errors together.
func (c *config) check() error {
	if c.clientCredentials && (c.fetch != nil || c.callbackPort != 0 || c.openURL != nil) {
		c.errs = append(c.errs, "WithClientCredentials needs no user: it excludes the browser and redirect options")
	}
	if c.fetch != nil && (c.callbackPort != 0 || c.openURL != nil) {
		c.errs = append(c.errs, "WithAuthorizationCodeFetcher replaces the loopback redirect: it excludes WithCallbackPort and WithOpenURL")
	}
	if len(c.errs) > 0 {
		return errors.New("mcpoauth: " + strings.Join(c.errs, "; "))
	}
	if c.prompt == nil {
		c.prompt = os.Stderr
	}
	if c.timeout == 0 {
		c.timeout = 5 * time.Minute
	}
	if c.httpClient == nil {
		c.httpClient = &http.Client{Timeout: 30 * time.Second}
	}
	return nil
}

// TokenSource returns the source of the server's tokens. It is the one the last
// authorization made, or the one made of the stored token. Before any, it is
// nil, so the first request goes without a token and is answered 401.
func (h *Handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ts != nil || h.loaded || h.cfg.store == nil || h.cfg.clientCredentials {
		return h.ts, nil
	}
	g, err := h.cfg.store.Load(ctx, h.server)
	if err != nil {
		// Not marked loaded: a store that cannot be read (a wrong key) is
		// reported on every request. A new authorization must not overwrite it.
		return nil, fmt.Errorf("mcpoauth: loading the token of %s: %w", h.host, redact.Error(err, h.secrets()))
	}
	h.loaded = true
	if g != nil {
		h.log.Info("mcpoauth: using the stored token")
		h.ts = h.newSource(g)
	}
	return h.ts, nil
}

// Authorize runs the authorization flow after the server refused req with resp.
// resp is a 401, or a 403 insufficient_scope for more scopes.
// [Handler.TokenSource] then gives a token the server accepts.
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	h.authMu.Lock()
	defer h.authMu.Unlock()
	code, _ := challenge(resp)
	if resp.StatusCode == http.StatusForbidden && code != "insufficient_scope" || h.renewed(req, resp) {
		// A 403 that more scopes would not change is the server's answer,
		// which the retry gets again. And if another request authorized
		// while this one waited, the retry has the new token: the user is
		// not asked again.
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil
	}
	h.log.Info("mcpoauth: authorizing", slog.Int("status", resp.StatusCode))
	err := redact.Error(h.authorize(ctx, req, resp), h.secrets())
	if err != nil {
		h.log.Warn("mcpoauth: authorization failed", slog.String("error", err.Error()))
		if errors.Is(err, ErrDenied) || errors.Is(err, ErrTimeout) {
			return fmt.Errorf("authorizing with %s: %w", h.host, err)
		}
		return fmt.Errorf("mcpoauth: authorizing with %s: %w", h.host, err)
	}
	h.log.Info("mcpoauth: authorized")
	return nil
}

func (h *Handler) authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	if h.cfg.clientCredentials {
		// The go-sdk's handler keeps this context in the token source it makes,
		// for later tokens. So it must outlive the request. The HTTP client's
		// timeout bounds the requests.
		if err := h.inner.Authorize(context.WithoutCancel(ctx), req, resp); err != nil {
			return err
		}
		ts, _ := h.inner.TokenSource(ctx)
		h.mu.Lock()
		h.ts = redactingSource{ts, h}
		h.mu.Unlock()
		return nil
	}
	_, h.want = challenge(resp)
	if h.cfg.fetch == nil {
		ln, err := h.listen()
		if err != nil {
			resp.Body.Close()
			return err
		}
		h.ln = ln
		defer func() { ln.Close(); h.ln = nil }()
	}
	if h.inner == nil {
		inner, err := h.codeHandler()
		if err != nil {
			resp.Body.Close()
			return err
		}
		h.inner = inner
	}
	return h.inner.Authorize(ctx, req, resp)
}

// renewed reports whether an authorization since req was sent answers resp
// already. For a 401, the token has changed. For a 403 insufficient_scope, the
// scopes it asks for are granted.
func (h *Handler) renewed(req *http.Request, resp *http.Response) bool {
	h.mu.Lock()
	ts := h.ts
	h.mu.Unlock()
	if ts == nil {
		return false
	}
	if resp.StatusCode == http.StatusForbidden {
		s, ok := ts.(*savingSource)
		_, want := challenge(resp)
		return ok && len(want) > 0 && s.grants(want)
	}
	t, err := ts.Token()
	return err == nil && req.Header.Get("Authorization") != "Bearer "+t.AccessToken
}

// listen opens the loopback redirect's listener, on the port chosen before if
// any. A client registered with one redirect URI keeps it.
func (h *Handler) listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(h.port)))
	if err != nil {
		return nil, fmt.Errorf("listening for the authorization redirect: %w", err)
	}
	h.port = ln.Addr().(*net.TCPAddr).Port
	return ln, nil
}

// codeHandler makes the go-sdk's authorization-code handler. Discovery,
// registration, PKCE, the code exchange, refresh and step-up are its. It
// registers again at each authorization, as the authorization server may have
// changed.
func (h *Handler) codeHandler() (auth.OAuthHandler, error) {
	redirect, fetch := h.cfg.redirectURL, h.cfg.fetch
	if fetch == nil {
		redirect, fetch = fmt.Sprintf("http://127.0.0.1:%d/callback", h.port), h.loopback
	}
	c := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: fetch,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				RedirectURIs:            []string{redirect},
				ClientName:              "robby",
				GrantTypes:              []string{"authorization_code", "refresh_token"},
				ResponseTypes:           []string{"code"},
				TokenEndpointAuthMethod: "none",
			},
		},
		ScopeFilter:         h.scopeFilter,
		RequestRefreshToken: true,
		Client:              h.cfg.httpClient,
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			g := &Grant{Token: *t, ClientID: c.ClientID, ClientSecret: c.ClientSecret,
				TokenURL: c.Endpoint.TokenURL, AuthStyle: c.Endpoint.AuthStyle, Scopes: c.Scopes}
			h.save(ctx, g)
			ts := h.newSource(g)
			h.mu.Lock()
			h.ts = ts
			h.mu.Unlock()
			return ts, nil
		},
	}
	if h.cfg.clientID != "" {
		c.PreregisteredClient = &oauthex.ClientCredentials{ClientID: h.cfg.clientID}
		if h.cfg.clientSecret != "" {
			c.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: h.cfg.clientSecret}
		}
	}
	if h.cfg.clientMetadataURL != "" {
		c.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: h.cfg.clientMetadataURL}
	}
	return auth.NewAuthorizationCodeHandler(c)
}

// scopeFilter chooses the scopes to ask for among those discovered. It takes
// the configured ones if any, and adds those the challenge asks for. It keeps
// those of the current grant, which a step-up must not lose. (The go-sdk adds
// the scopes it granted itself, not those of a stored grant.)
func (h *Handler) scopeFilter(discovered []string) []string {
	scopes := discovered
	if len(h.cfg.scopes) > 0 {
		scopes = union(h.cfg.scopes, h.want)
	}
	if g := h.grant(); g != nil {
		scopes = union(scopes, g.Scopes)
	}
	return scopes
}

// grant returns a copy of the current grant, nil if none.
func (h *Handler) grant() *Grant {
	h.mu.Lock()
	s, ok := h.ts.(*savingSource)
	h.mu.Unlock()
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.grant
	return &g
}

// union returns a's scopes followed by those of b not in a.
func union(a, b []string) []string {
	u := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(u, s) {
			u = append(u, s)
		}
	}
	return u
}

// challenge returns the error and the scopes of the Bearer challenge of
// resp's WWW-Authenticate header.
func challenge(resp *http.Response) (code string, scopes []string) {
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return "", nil
	}
	for _, c := range cs {
		if strings.EqualFold(c.Scheme, "bearer") {
			return c.Params["error"], strings.Fields(c.Params["scope"])
		}
	}
	return "", nil
}
