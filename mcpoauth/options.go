package mcpoauth

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// An Option configures a [Handler]. One that cannot be used returns an
// error; [New] reports the errors of all its options together.
type Option func(*config) error

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
	errs                   []string // the options' errors, and check's
}

// WithClient authorizes as a client registered beforehand with the
// authorization server, instead of registering one dynamically. secret is
// "" for a public client. Its redirect URI must be the one the handler
// uses: http://127.0.0.1:PORT/callback with [WithCallbackPort], or the URL
// given to [WithAuthorizationCodeFetcher].
func WithClient(id, secret string) Option {
	return func(c *config) error {
		c.clientID, c.clientSecret = id, secret
		if id == "" {
			return errors.New("WithClient: empty client ID")
		}
		return nil
	}
}

// WithClientCredentials authorizes a machine, with no user and no browser. It
// uses the client_credentials grant (RFC 6749 §4.4) with a pre-registered
// client's ID and secret. They are sent as the authorization server's metadata
// prefers (client_secret_basic or client_secret_post). The tokens of this grant
// are asked for again when they expire, and not stored.
func WithClientCredentials(id, secret string) Option {
	return func(c *config) error {
		c.clientID, c.clientSecret, c.clientCredentials = id, secret, true
		if id == "" || secret == "" {
			return errors.New("WithClientCredentials: the client ID and secret are both required")
		}
		return nil
	}
}

// WithClientMetadataURL registers the client by a client ID metadata document.
// u is an https URL, with a path, where the client's metadata is published.
// Authorization servers that support such documents use it first. A
// pre-registered client or dynamic registration come after.
func WithClientMetadataURL(u string) Option {
	return func(c *config) error {
		c.clientMetadataURL = u
		if v, err := url.Parse(u); u != "" && (err != nil || v.Scheme != "https" || strings.Trim(v.Path, "/") == "") {
			return errors.New("WithClientMetadataURL: the URL must be an https URL with a path")
		}
		return nil
	}
}

// WithScopes sets the scopes to ask for, instead of all those the server's
// protected-resource metadata lists. The scopes a server asks for in a
// WWW-Authenticate challenge (a 403 insufficient_scope, for step-up) are
// added to them.
func WithScopes(scopes ...string) Option {
	return func(c *config) error {
		c.scopes = append(c.scopes[:0:0], scopes...)
		return nil
	}
}

// WithCallbackPort sets the port of the loopback redirect,
// http://127.0.0.1:PORT/callback, for a pre-registered client whose
// redirect URI is fixed. By default the port is chosen at random the first
// time the user authorizes, and kept.
func WithCallbackPort(port int) Option {
	return func(c *config) error {
		c.callbackPort = port
		if port < 1 || port > 65535 {
			return errors.New("WithCallbackPort: the port must be in 1-65535")
		}
		return nil
	}
}

// WithOpenURL sets how the user is sent to the authorization URL. The loopback
// redirect still brings the code back. By default the URL is written to the
// prompt writer (see [WithPrompt]). It is also opened in the browser (xdg-open,
// open, or rundll32 on Windows).
func WithOpenURL(open func(ctx context.Context, authURL string) error) Option {
	return func(c *config) error {
		c.openURL = open
		return nil
	}
}

// WithPrompt sets where the default URL opener writes the authorization URL.
// The user can open it by hand if no browser opens. The default is os.Stderr.
func WithPrompt(w io.Writer) Option {
	return func(c *config) error {
		c.prompt = w
		return nil
	}
}

// WithAuthorizationCodeFetcher replaces the browser and the loopback redirect.
// fetch is given the authorization URL. It returns the code, state and issuer
// that the authorization server sent to redirectURL (a web application's own
// endpoint, say). The handler checks the state.
func WithAuthorizationCodeFetcher(redirectURL string, fetch auth.AuthorizationCodeFetcher) Option {
	return func(c *config) error {
		c.redirectURL, c.fetch = redirectURL, fetch
		if redirectURL == "" || fetch == nil {
			return errors.New("WithAuthorizationCodeFetcher: a redirect URL and a fetcher are both required")
		}
		return nil
	}
}

// WithAuthorizationTimeout bounds the wait for the user to authorize in
// the browser. The default is 5 minutes.
func WithAuthorizationTimeout(d time.Duration) Option {
	return func(c *config) error {
		c.timeout = d
		if d <= 0 {
			return errors.New("WithAuthorizationTimeout: the timeout must be positive")
		}
		return nil
	}
}

// WithTokenStore keeps the tokens in s, so that they outlive the process.
// By default they are kept in the handler's memory only.
func WithTokenStore(s TokenStore) Option {
	return func(c *config) error {
		c.store = s
		return nil
	}
}

// WithHTTPClient sets the client of the requests to the authorization
// server (metadata, registration, token). The default is a client with a
// 30-second timeout.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) error {
		c.httpClient = hc
		return nil
	}
}

// WithLogger logs the authorizations and refreshes, never a token or a
// secret. By default nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		c.logger = l
		return nil
	}
}
