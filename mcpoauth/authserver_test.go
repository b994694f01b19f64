package mcpoauth_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// authServer is an OAuth 2.1 authorization server for the tests, strict
// where a client could go wrong: metadata (RFC 8414), dynamic client
// registration (RFC 7591), the authorization code with PKCE S256 only,
// exact redirect URIs and the resource indicator (RFC 8707), refresh
// tokens rotated at each use, the client_credentials grant for confidential
// clients, and revocation (RFC 7009) of a token's whole family.
type authServer struct {
	*httptest.Server
	resource string // the only resource tokens are issued for
	scopes   []string

	mu       sync.Mutex
	lifetime time.Duration // of access tokens
	deny     bool          // the user refuses
	clients  map[string]*asClient
	codes    map[string]*asCode
	tokens   map[string]*asToken // access and refresh tokens
	revoked  map[string]bool     // families
	counts   map[string]int      // requests by kind
}

type asClient struct {
	secret    string
	redirects []string
}

type asCode struct {
	client, redirect, challenge string
	scopes                      []string
}

type asToken struct {
	client, family string
	scopes         []string
	refresh        bool
	machine        bool // of the client_credentials grant
	expiry         time.Time
}

func newAuthServer(t *testing.T, resource string, scopes ...string) *authServer {
	as := &authServer{resource: resource, scopes: scopes, lifetime: time.Hour,
		clients: map[string]*asClient{}, codes: map[string]*asCode{}, tokens: map[string]*asToken{},
		revoked: map[string]bool{}, counts: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", as.metadata)
	mux.HandleFunc("POST /register", as.register)
	mux.HandleFunc("GET /authorize", as.authorize)
	mux.HandleFunc("POST /token", as.token)
	mux.HandleFunc("POST /revoke", as.revoke)
	as.Server = httptest.NewServer(mux)
	t.Cleanup(as.Close)
	return as
}

func (as *authServer) count(kind string) int {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.counts[kind]
}

func (as *authServer) setLifetime(d time.Duration) { as.mu.Lock(); as.lifetime = d; as.mu.Unlock() }
func (as *authServer) setDeny(deny bool)           { as.mu.Lock(); as.deny = deny; as.mu.Unlock() }

// addClient pre-registers a client.
func (as *authServer) addClient(id, secret string, redirects ...string) {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.clients[id] = &asClient{secret: secret, redirects: redirects}
}

func (as *authServer) metadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, &oauthex.AuthServerMeta{
		Issuer:                            as.URL,
		AuthorizationEndpoint:             as.URL + "/authorize",
		TokenEndpoint:                     as.URL + "/token",
		RegistrationEndpoint:              as.URL + "/register",
		RevocationEndpoint:                as.URL + "/revoke",
		ScopesSupported:                   append(slices.Clone(as.scopes), "offline_access"),
		ResponseTypesSupported:            []string{"code"},
		GrantTypesSupported:               []string{"authorization_code", "refresh_token", "client_credentials"},
		TokenEndpointAuthMethodsSupported: []string{"client_secret_basic", "client_secret_post", "none"},
		CodeChallengeMethodsSupported:     []string{"S256"},
	})
}

func (as *authServer) register(w http.ResponseWriter, r *http.Request) {
	var m oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil || len(m.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	id, secret := "dyn-"+rand.Text(), ""
	if m.TokenEndpointAuthMethod != "none" {
		secret = rand.Text()
	}
	as.mu.Lock()
	as.counts["register"]++
	as.clients[id] = &asClient{secret: secret, redirects: m.RedirectURIs}
	as.mu.Unlock()
	writeJSON(w, http.StatusCreated, &oauthex.ClientRegistrationResponse{
		ClientRegistrationMetadata: m, ClientID: id, ClientSecret: secret})
}

// authorize is the user's consent, given at once (or refused with deny),
// after the checks that keep a code from reaching anyone but the client.
func (as *authServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	as.mu.Lock()
	defer as.mu.Unlock()
	as.counts["authorize"]++
	c := as.clients[q.Get("client_id")]
	redirect := q.Get("redirect_uri")
	if c == nil || !slices.Contains(c.redirects, redirect) {
		http.Error(w, "unknown client or redirect URI", http.StatusBadRequest) // never redirect there
		return
	}
	back := func(params url.Values) {
		params.Set("state", q.Get("state"))
		http.Redirect(w, r, redirect+"?"+params.Encode(), http.StatusFound)
	}
	switch {
	case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		back(url.Values{"error": {"invalid_request"}, "error_description": {"PKCE S256 is required"}})
	case q.Get("resource") != as.resource:
		back(url.Values{"error": {"invalid_target"}})
	case as.deny:
		back(url.Values{"error": {"access_denied"}, "error_description": {"the user said no"}})
	default:
		code := rand.Text()
		as.codes[code] = &asCode{client: q.Get("client_id"), redirect: redirect, challenge: q.Get("code_challenge"),
			scopes: strings.Fields(q.Get("scope"))}
		back(url.Values{"code": {code}})
	}
}

// client authenticates the client of a token or revocation request.
func (as *authServer) client(r *http.Request) (string, bool) {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	c := as.clients[id]
	return id, c != nil && c.secret == secret
}

func (as *authServer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	client, ok := as.client(r)
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	f := r.PostForm
	grant := f.Get("grant_type")
	as.counts[grant]++
	invalid := func() { writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"}) }
	switch grant {
	case "authorization_code":
		c := as.codes[f.Get("code")]
		delete(as.codes, f.Get("code")) // one use
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if c == nil || c.client != client || c.redirect != f.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge || f.Get("resource") != as.resource {
			invalid()
			return
		}
		as.issue(w, client, rand.Text(), c.scopes, true)
	case "refresh_token":
		old := as.tokens[f.Get("refresh_token")]
		delete(as.tokens, f.Get("refresh_token")) // rotated
		if old == nil || !old.refresh || old.client != client || as.revoked[old.family] {
			invalid()
			return
		}
		as.issue(w, client, old.family, old.scopes, true)
	case "client_credentials":
		if as.clients[client].secret == "" {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized_client"})
			return
		}
		as.issue(w, client, rand.Text(), strings.Fields(f.Get("scope")), false)
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
	}
}

// issue issues an access token, and a refresh token unless the grant is
// client_credentials, a machine's.
func (as *authServer) issue(w http.ResponseWriter, client, family string, scopes []string, refresh bool) {
	access := rand.Text()
	as.tokens[access] = &asToken{client: client, family: family, scopes: scopes, machine: !refresh,
		expiry: time.Now().Add(as.lifetime)}
	resp := map[string]any{"access_token": access, "token_type": "Bearer",
		"expires_in": int(as.lifetime.Seconds()), "scope": strings.Join(scopes, " ")}
	if refresh {
		rt := rand.Text()
		as.tokens[rt] = &asToken{client: client, family: family, scopes: scopes, refresh: true}
		resp["refresh_token"] = rt
	}
	writeJSON(w, http.StatusOK, resp)
}

// revoke revokes the family of the token: the refresh token and every
// access token made with it.
func (as *authServer) revoke(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	as.mu.Lock()
	defer as.mu.Unlock()
	as.counts["revoke"]++
	if t := as.tokens[r.PostForm.Get("token")]; t != nil {
		as.revoked[t.family] = true
	}
	w.WriteHeader(http.StatusOK)
}

// verify is the MCP server's token verifier.
func (as *authServer) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	as.mu.Lock()
	defer as.mu.Unlock()
	t := as.tokens[token]
	if t == nil || t.refresh || as.revoked[t.family] || time.Now().After(t.expiry) {
		return nil, auth.ErrInvalidToken
	}
	user := "alice" // who consents to every authorization
	if t.machine {
		user = t.client
	}
	return &auth.TokenInfo{Scopes: t.scopes, Expiration: t.expiry, UserID: user}, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
