package mcpoauth

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// An Option configures a [Handler]; [New] checks them together.
type Option func(*config)

// config is what the options fill in; New validates it once.
type config struct {
	clientID, clientSecret string
	clientCredentials      bool
	clientMetadataURL      string
	scopes                 []string
	callbackPort           int
	openURL                func(ctx context.Context, authURL string) error
	prompt                 io.Writer
	redirectURL            string
	fetch                  auth.AuthorizationCodeFetcher
	timeout                time.Duration
	store                  TokenStore
	httpClient             *http.Client
	logger                 *slog.Logger
	errs                   []string
}

// WithClient authorizes as a client registered beforehand with the
// authorization server, instead of registering one dynamically. secret is
// "" for a public client. Its redirect URI must be the one the handler
// uses: http://127.0.0.1:PORT/callback with [WithCallbackPort], or the URL
// given to [WithAuthorizationCodeFetcher].
func WithClient(id, secret string) Option {
	return func(c *config) {
		c.clientID, c.clientSecret = id, secret
		if id == "" {
			c.errs = append(c.errs, "WithClient: empty client ID")
		}
	}
}

// WithClientCredentials authorizes a machine, with no user and no browser. It
// uses the client_credentials grant (RFC 6749 §4.4) with a pre-registered
// client's ID and secret. They are sent as the authorization server's metadata
// prefers (client_secret_basic or client_secret_post). The tokens of this grant
// are asked for again when they expire, and not stored.
func WithClientCredentials(id, secret string) Option {
	return func(c *config) {
		c.clientID, c.clientSecret, c.clientCredentials = id, secret, true
		if id == "" || secret == "" {
			c.errs = append(c.errs, "WithClientCredentials: the client ID and secret are both required")
		}
	}
}

// WithClientMetadataURL registers the client by a client ID metadata document.
// u is an https URL, with a path, where the client's metadata is published.
// Authorization servers that support such documents use it first. A
// pre-registered client or dynamic registration come after.
func WithClientMetadataURL(u string) Option {
	return func(c *config) { c.clientMetadataURL = u }
}

// WithScopes sets the scopes to ask for, instead of all those the server's
// protected-resource metadata lists. The scopes a server asks for in a
// WWW-Authenticate challenge (a 403 insufficient_scope, for step-up) are
// added to them.
func WithScopes(scopes ...string) Option {
	return func(c *config) { c.scopes = append(c.scopes[:0:0], scopes...) }
}

// WithCallbackPort sets the port of the loopback redirect,
// http://127.0.0.1:PORT/callback, for a pre-registered client whose
// redirect URI is fixed. By default the port is chosen at random the first
// time the user authorizes, and kept.
func WithCallbackPort(port int) Option {
	return func(c *config) {
		c.callbackPort = port
		if port < 1 || port > 65535 {
			c.errs = append(c.errs, "WithCallbackPort: the port must be in 1-65535")
		}
	}
}

// WithOpenURL sets how the user is sent to the authorization URL. The loopback
// redirect still brings the code back. By default the URL is written to the
// prompt writer (see [WithPrompt]). It is also opened in the browser (xdg-open,
// open, or rundll32 on Windows).
func WithOpenURL(open func(ctx context.Context, authURL string) error) Option {
	return func(c *config) { c.openURL = open }
}

// WithPrompt sets where the default URL opener writes the authorization URL.
// The user can open it by hand if no browser opens. The default is os.Stderr.
func WithPrompt(w io.Writer) Option {
	return func(c *config) { c.prompt = w }
}

// WithAuthorizationCodeFetcher replaces the browser and the loopback redirect.
// fetch is given the authorization URL. It returns the code, state and issuer
// that the authorization server sent to redirectURL (a web application's own
// endpoint, say). The handler checks the state.
func WithAuthorizationCodeFetcher(redirectURL string, fetch auth.AuthorizationCodeFetcher) Option {
	return func(c *config) {
		c.redirectURL, c.fetch = redirectURL, fetch
		if redirectURL == "" || fetch == nil {
			c.errs = append(c.errs, "WithAuthorizationCodeFetcher: a redirect URL and a fetcher are both required")
		}
	}
}

// WithAuthorizationTimeout bounds the wait for the user to authorize in
// the browser. The default is 5 minutes.
func WithAuthorizationTimeout(d time.Duration) Option {
	return func(c *config) {
		c.timeout = d
		if d <= 0 {
			c.errs = append(c.errs, "WithAuthorizationTimeout: the timeout must be positive")
		}
	}
}

// WithTokenStore keeps the tokens in s, so that they outlive the process.
// By default they are kept in the handler's memory only.
func WithTokenStore(s TokenStore) Option {
	return func(c *config) { c.store = s }
}

// WithHTTPClient sets the client of the requests to the authorization
// server (metadata, registration, token). The default is a client with a
// 30-second timeout.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) { c.httpClient = hc }
}

// WithLogger logs the authorizations and refreshes, never a token or a
// secret. By default nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}
