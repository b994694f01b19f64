package mcpconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/mcpoauth"
)

// An Option configures [Load] and [Parse], which report its error.
type Option func(*options) error

type options struct {
	oauth    bool // every streamable HTTP server gets a handler
	oauthOpt []mcpoauth.Option
}

// WithOAuth authorizes the streamable HTTP servers with OAuth, as Claude Code,
// Cursor and VS Code do. Each server without an Authorization header gets a
// handler of package mcpoauth made with opts (a token store, a logger). A
// server that answers 401 then starts the authorization in the browser. An
// entry's "oauth" or "auth" fields are laid over opts. Without WithOAuth, only
// the entries with those fields get a handler.
func WithOAuth(opts ...mcpoauth.Option) Option {
	return func(o *options) error {
		o.oauth, o.oauthOpt = true, append(o.oauthOpt, opts...)
		return nil
	}
}

// oauthEntry is an entry's "oauth" object (Claude Code's, with robby's
// additions) or "auth" object (Cursor's), decoded.
type oauthEntry struct {
	key                    string // which of the two it was
	clientID, clientSecret string
	scopes                 []string
	callbackPort           int
	grantType              string
}

// oauthFields maps the fields of each object to what they set.
var oauthFields = map[string]map[string]string{
	"oauth": {"clientId": "id", "clientSecret": "secret", "scopes": "scopes", "callbackPort": "port", "grantType": "grant"},
	"auth":  {"CLIENT_ID": "id", "CLIENT_SECRET": "secret", "scopes": "scopes"},
}

// decodeOAuth decodes the entry's "oauth" or "auth" object, if any.
func decodeOAuth(fields map[string]json.RawMessage) (*oauthEntry, error) {
	_, hasOAuth := fields["oauth"]
	_, hasAuth := fields["auth"]
	if hasOAuth && hasAuth {
		return nil, errors.New(`both "oauth" and "auth" are set: keep one`)
	}
	key := "oauth"
	if hasAuth {
		key = "auth"
	} else if !hasOAuth {
		return nil, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(fields[key], &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("%q must be an object", key)
	}
	known := oauthFields[key]
	o := &oauthEntry{key: key}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		var v any
		want := "a string"
		switch known[k] {
		case "id":
			v = &o.clientID
		case "secret":
			v = &o.clientSecret
		case "grant":
			v = &o.grantType
		case "scopes":
			v, want = &o.scopes, "an array of strings"
		case "port":
			v, want = &o.callbackPort, "a port number"
		default:
			return nil, fmt.Errorf("%q has no field %q: robby reads %s", key, k, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
		}
		if err := json.Unmarshal(obj[k], v); err != nil {
			return nil, fmt.Errorf("%q: %q must be %s", key, k, want)
		}
	}
	return o, nil
}

// expand replaces the variables in the client's ID and secret, keeping
// their values among e's secrets.
func (o *oauthEntry) expand(e *entry) error {
	if err := e.expandField(&o.clientID, fmt.Sprintf("%q client ID", o.key)); err != nil {
		return err
	}
	return e.expandField(&o.clientSecret, fmt.Sprintf("%q client secret", o.key))
}

// withOAuth gives s, a server of the given kind at url, its OAuth handler. It
// does so if the entry or the options ask for one.
func withOAuth(s robby.MCPServer, kind, url string, headers map[string]string, o *oauthEntry, opts *options) (robby.MCPServer, error) {
	if o == nil && (!opts.oauth || kind != "http" || hasAuthorization(headers)) {
		return s, nil
	}
	if o != nil && kind != "http" {
		return s, fmt.Errorf("%q is for streamable HTTP servers, not %s", o.key, kind)
	}
	hopts := slices.Clone(opts.oauthOpt)
	if o != nil {
		more, err := o.options()
		if err != nil {
			return s, err
		}
		hopts = append(hopts, more...)
	}
	h, err := mcpoauth.New(url, hopts...)
	if err != nil {
		return s, err
	}
	return s.WithOAuth(h), nil
}

// options returns the handler options of the entry's fields.
func (o *oauthEntry) options() ([]mcpoauth.Option, error) {
	var opts []mcpoauth.Option
	switch o.grantType {
	case "client_credentials":
		opts = append(opts, mcpoauth.WithClientCredentials(o.clientID, o.clientSecret))
	case "", "authorization_code":
		if o.clientID != "" {
			opts = append(opts, mcpoauth.WithClient(o.clientID, o.clientSecret))
		} else if o.clientSecret != "" {
			return nil, fmt.Errorf("%q has a client secret but no client ID", o.key)
		}
	default:
		return nil, fmt.Errorf(`%q: unknown "grantType" %q: want authorization_code or client_credentials`, o.key, o.grantType)
	}
	if len(o.scopes) > 0 {
		opts = append(opts, mcpoauth.WithScopes(o.scopes...))
	}
	if o.callbackPort != 0 {
		opts = append(opts, mcpoauth.WithCallbackPort(o.callbackPort))
	}
	return opts, nil
}

// hasAuthorization reports whether the headers authorize the requests
// already, a token the file gives.
func hasAuthorization(headers map[string]string) bool {
	for k := range headers {
		if http.CanonicalHeaderKey(k) == "Authorization" {
			return true
		}
	}
	return false
}
