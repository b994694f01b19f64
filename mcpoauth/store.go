package mcpoauth

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"golang.org/x/oauth2"

	"github.com/robby-go/robby/internal/redact"
)

// A TokenStore keeps the tokens of MCP servers between runs, one [Grant] a
// server, keyed by the server's URL. [FileStore] keeps them in a file,
// encrypted; a program can keep them in its own database or the system's
// keychain. Its methods may be called concurrently.
type TokenStore interface {
	// Load returns the server's grant, or nil and no error if there is
	// none.
	Load(ctx context.Context, server string) (*Grant, error)
	// Save keeps the server's grant, replacing the one kept before.
	Save(ctx context.Context, server string, g *Grant) error
}

// A Grant is what a [TokenStore] keeps for a server. It holds the token, and
// what refreshing it takes (the client and the token endpoint). Its fields are
// secrets: keep them where only the user can read them.
type Grant struct {
	Token        oauth2.Token     `json:"token"`
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	TokenURL     string           `json:"token_url"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style,omitempty"`
	Scopes       []string         `json:"scopes,omitempty"`
}

// LogValue logs a grant without its secrets.
func (g Grant) LogValue() slog.Value {
	return slog.GroupValue(slog.String("client_id", g.ClientID), slog.Time("expiry", g.Token.Expiry),
		slog.Bool("refreshable", g.Token.RefreshToken != ""))
}

// newSource returns the token source of g. It gives g's token while it is
// valid, then refreshes it at its token endpoint, saving each new token.
func (h *Handler) newSource(g *Grant) oauth2.TokenSource {
	c := &oauth2.Config{ClientID: g.ClientID, ClientSecret: g.ClientSecret, Scopes: g.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: g.TokenURL, AuthStyle: g.AuthStyle}}
	// The source outlives the request that made it: its refreshes must not
	// be cancelled with that request.
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, h.cfg.httpClient)
	h.learn(g)
	tok := g.Token
	return &savingSource{h: h, src: c.TokenSource(ctx, &tok), grant: *g, last: g.Token.AccessToken}
}

// savingSource saves each token its source refreshes.
type savingSource struct {
	h   *Handler
	src oauth2.TokenSource

	mu    sync.Mutex
	grant Grant
	last  string // the last access token given
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	// One at a time, so that the tokens are saved in the order they came.
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.src.Token()
	if err != nil {
		// A token endpoint may quote the refresh token it refused.
		err = redact.Error(err, s.h.secrets())
		s.h.log.Warn("mcpoauth: refreshing the token failed", slog.String("error", err.Error()))
		return nil, err
	}
	if t.AccessToken != s.last {
		s.last = t.AccessToken
		s.grant.Token = *t
		s.h.learn(&s.grant)
		s.h.log.Info("mcpoauth: token refreshed", slog.Time("expiry", t.Expiry))
		g := s.grant // the store may keep it
		s.h.save(context.Background(), &g)
	}
	return t, nil
}

// grants reports whether the grant has all the scopes.
func (s *savingSource) grants(scopes []string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sc := range scopes {
		if !slices.Contains(s.grant.Scopes, sc) {
			return false
		}
	}
	return true
}

// save keeps g in the store, if any. A store that fails costs the next run
// an authorization, not this one: the failure is logged.
func (h *Handler) save(ctx context.Context, g *Grant) {
	if h.cfg.store == nil {
		return
	}
	if err := h.cfg.store.Save(ctx, h.server, g); err != nil {
		h.log.Warn("mcpoauth: saving the token failed", slog.String("error", err.Error()))
	}
}

// learn adds g's secrets to those errors and logs leave out. They join the
// configured client secret and the secrets of the grants before, as a late
// error may quote an old token.
func (h *Handler) learn(g *Grant) {
	s := redact.Forms(h.cfg.clientSecret)
	if g != nil {
		s = slices.Concat(s, redact.Forms(g.Token.AccessToken), redact.Forms(g.Token.RefreshToken), redact.Forms(g.ClientSecret))
	}
	if old := h.known.Load(); old != nil {
		s = append(s, (*old)...)
	}
	seen := map[string]bool{}
	known := make([]string, 0, maxKnown)
	for _, v := range s {
		if !seen[v] && len(known) < maxKnown { // the oldest go first
			seen[v] = true
			known = append(known, v)
		}
	}
	h.known.Store(&known)
}

// maxKnown bounds the secrets a handler keeps: those of a few grants.
const maxKnown = 32

// secrets returns the values errors and logs leave out.
func (h *Handler) secrets() []string {
	if p := h.known.Load(); p != nil {
		return *p
	}
	return nil
}

// redactingSource removes the secrets from the errors of a token source that is
// not a savingSource. It wraps the client_credentials grant's source.
type redactingSource struct {
	src oauth2.TokenSource
	h   *Handler
}

func (r redactingSource) Token() (*oauth2.Token, error) {
	t, err := r.src.Token()
	return t, redact.Error(err, r.h.secrets())
}
