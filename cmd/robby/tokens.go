package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/robby-go/robby/internal/httpapi"
)

// tokenFlags are the bearer tokens of the commands that serve over HTTP,
// robby serve and robby mcp -http: -token (repeated), -token-file, else
// ROBBY_TOKEN. Each token is one user's. Off loopback, one is needed unless
// -insecure-no-token says otherwise.
type tokenFlags struct {
	tokens   serveTokens
	file     string
	insecure bool
}

// tokenEnv is the variable of the commands that serve over HTTP.
var tokenEnv = []string{"ROBBY_TOKEN\tthe bearer token (TOKEN or USER:TOKEN), when no -token or -token-file is given; unlike a flag, not visible in ps"}

func (t *tokenFlags) register(fs *flag.FlagSet) {
	t.tokens = serveTokens{}
	fs.Func("token", "bearer token a client may send, as `USER:TOKEN` (a bare TOKEN is the default user's); repeat for more users (env ROBBY_TOKEN, when no token is given)", func(v string) error {
		return t.tokens.add(v, "-token")
	})
	fs.StringVar(&t.file, "token-file", "", "file of tokens, one USER:TOKEN (or TOKEN) a line; # starts a comment line")
	fs.BoolVar(&t.insecure, "insecure-no-token", false, "serve without a token on an address other than loopback: anyone who reaches it runs the agent and its tools")
}

// resolve adds the tokens of -token-file and, when none is given, of
// ROBBY_TOKEN. Unless -insecure-no-token, it refuses an address off loopback
// without a token.
func (t *tokenFlags) resolve(addr string) (serveTokens, error) {
	if t.file != "" {
		if err := t.tokens.readFile(t.file); err != nil {
			return nil, err
		}
	}
	if env := os.Getenv("ROBBY_TOKEN"); len(t.tokens) == 0 && env != "" {
		if err := t.tokens.add(env, "ROBBY_TOKEN"); err != nil {
			return nil, err
		}
	}
	if len(t.tokens) == 0 && !t.insecure && !isLoopback(addr) {
		return nil, fmt.Errorf("refusing to serve on %s without a token: anyone who can reach it could run the agent and its tools.\n"+
			"Set one with ROBBY_TOKEN=... (not visible in ps), -token or -token-file, listen on loopback (127.0.0.1), or pass -insecure-no-token", addr)
	}
	return t.tokens, nil
}

// serveTokens are the bearer tokens a server accepts, each mapped to its
// user. The tokens never appear in an error or a log.
type serveTokens map[string]string

// verifier is the go-sdk's token verifier of the tokens: the user is the
// token's.
func (t serveTokens) verifier() auth.TokenVerifier {
	guard := httpapi.NewGuard(t, nil)
	return func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
		user, ok := guard.User(got)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: user}, nil
	}
}

// add takes "USER:TOKEN", or a bare "TOKEN" of the user "". The part before the
// first colon is the user, so a bare token holds no colon.
func (t serveTokens) add(v, where string) error {
	user, token, ok := strings.Cut(strings.TrimSpace(v), ":")
	if !ok {
		user, token = "", user
	}
	switch {
	case token == "":
		return fmt.Errorf("%s: an empty token", where)
	case ok && user == "":
		return fmt.Errorf("%s: an empty user name before the colon", where)
	}
	if had, dup := t[token]; dup && had != user {
		return fmt.Errorf("%s: a token already given to another user", where)
	}
	t[token] = user
	return nil
}

// readFile adds the tokens of a file, one "USER:TOKEN" or "TOKEN" a line. Blank
// lines and lines starting with # are skipped.
func (t serveTokens) readFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("-token-file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	read := 0
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := t.add(line, fmt.Sprintf("-token-file %s, line %d", path, n)); err != nil {
			return err
		}
		read++
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("-token-file %s: %w", path, err)
	}
	if read == 0 {
		return errors.New("-token-file " + path + ": no token in the file")
	}
	return nil
}

// warnOpen says, once serving, that addr is open to anyone.
func warnOpen(stderr io.Writer, addr string, hasToken bool) {
	if !hasToken && !isLoopback(addr) {
		fmt.Fprintln(stderr, "robby: warning: no token (-insecure-no-token): anyone who reaches this address runs the agent and its tools")
	}
}

// isLoopback reports whether addr ("host:port") listens on loopback only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
