// Package mcpconfig reads the mcpServers files of Claude Desktop, Claude Code, Cursor and VS
// Code into [robby.MCPServer]s. An agent so uses the MCP servers already set up for those
// tools:
//
//	servers, err := mcpconfig.Load(".vscode/mcp.json")
//	if err != nil {
//		log.Fatal(err)
//	}
//	agent, err := robby.New(robby.WithMCP(servers...), ...)
//
// It builds the servers with robby's exported constructors only.
//
// # Format
//
// The servers are under the top-level key "mcpServers" (Claude Desktop, Claude Code, Cursor) or
// "servers" (VS Code, whose "inputs" are ignored). Each maps a server's name to either a
// command run as a subprocess:
//
//	"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
//		"env": {"DEBUG": "1"}, "cwd": "/srv"}
//
// or a remote server:
//
//	"remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
//
// A remote server's "type" is "http" (or "streamable-http", "streamableHttp"), "sse", or "ws"
// (or "websocket"). Without a type, the URL tells. A URL whose path ends in /sse is an SSE
// server, and a ws:// or wss:// URL a WebSocket one. Any other is a streamable HTTP one. A
// command's type, if given, is "stdio". An entry with "disabled": true is skipped. Robby also
// reads "optional": true, "allow" and "deny" (lists of tool names), "deferLoading": true
// (Claude's defer_loading: the model finds the server's tools with search_tools) and
// "toolAnnotations" (see below). They act as [robby.MCPServer.WithOptional],
// [robby.MCPServer.WithAllow], [robby.MCPServer.WithDeny], [robby.MCPServer.WithDeferLoading]
// and [robby.MCPServer.WithToolAnnotations].
// Other fields are ignored, as tools add their own.
//
// # Tool annotations
//
// A server's "toolAnnotations" maps the names of its tools (as the server names them) to MCP
// tool annotations, which replace those the server lists for that tool. The file wins: a
// program need not trust a server to describe its own tools.
//
//	"files": {"command": "mcp-files", "toolAnnotations": {
//		"write_file": {"idempotentHint": true, "destructiveHint": true},
//		"search": {"readOnlyHint": true}}}
//
// "readOnlyHint" or "idempotentHint" true makes the tool idempotent: a call that a crash
// interrupted runs again. "destructiveHint" true, without "readOnlyHint", marks it destructive
// in approvals and on the chat page. "openWorldHint" and "title" are accepted and unused. Any
// other field is an error.
//
// # OAuth
//
// A streamable HTTP server's "oauth" object (Claude Code's, with robby's additions) or "auth"
// object (Cursor's) gives it an OAuth handler. The handler is of package mcpoauth (see
// [WithOAuth] for all servers):
//
//	"linear": {"url": "https://mcp.linear.app/mcp", "oauth": {"clientId": "${LINEAR_CLIENT_ID}",
//		"clientSecret": "${LINEAR_CLIENT_SECRET}", "scopes": ["read"], "callbackPort": 8976}}
//	"ci": {"url": "https://mcp.example.com/mcp", "oauth": {"grantType": "client_credentials",
//		"clientId": "ci-bot", "clientSecret": "${CI_SECRET}"}}
//	"docs": {"url": "https://mcp.example.com/mcp", "auth": {"CLIENT_ID": "app", "CLIENT_SECRET": "${SECRET}", "scopes": ["read"]}}
//
// "clientId"/"CLIENT_ID" and "clientSecret"/"CLIENT_SECRET" name a pre-registered client.
// Without them, the client registers itself. "scopes" pins the scopes asked for. "callbackPort"
// fixes the port of the loopback redirect http://127.0.0.1:PORT/callback, the redirect URI
// registered for the client. "grantType" "client_credentials" authorizes a machine, with no
// browser. Other fields in these objects are errors, so a setting robby does not apply is not
// silently dropped.
//
// ${VAR}, ${env:VAR} and ${VAR:-default} are replaced with the program's environment variable,
// so secrets stay out of the file. They are read in the command, args, cwd, env values, url,
// header values and the OAuth client ID and secret. A variable that is not set, and has no
// default, is an error. Every value put in so is a secret ([robby.MCPServer.WithSecrets]): the
// agent keeps it out of its errors and logs. A $ not followed by { is kept as is. Comments and
// trailing commas, which VS Code allows, are accepted.
//
// The servers are returned sorted by name, as JSON objects have no order.
package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tailscale/hujson"

	"github.com/robby-go/robby"
)

// Load reads the MCP servers of the configuration file at path (see the package documentation
// for the format). An error names the file and the faulty server. For a file that does not
// exist, errors.Is(err, fs.ErrNotExist) holds.
func Load(path string, opts ...Option) ([]robby.MCPServer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			err = pe.Err // the path is in the prefix already
		}
		return nil, fmt.Errorf("mcpconfig: %s: %w", path, err)
	}
	servers, err := parse(data, opts)
	if err != nil {
		return nil, fmt.Errorf("mcpconfig: %s: %w", path, err)
	}
	return servers, nil
}

// Parse is [Load] for a configuration held in memory.
func Parse(data []byte, opts ...Option) ([]robby.MCPServer, error) {
	servers, err := parse(data, opts)
	if err != nil {
		return nil, fmt.Errorf("mcpconfig: %w", err)
	}
	return servers, nil
}

func parse(data []byte, opts []Option) ([]robby.MCPServer, error) {
	var o options
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("nil Option")
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	entries, err := serverEntries(data)
	if err != nil {
		return nil, err
	}
	var servers []robby.MCPServer
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		s, skip, err := serverOf(name, entries[name], &o)
		if err != nil {
			return nil, err
		}
		if !skip {
			servers = append(servers, s)
		}
	}
	return servers, nil
}

// serverEntries returns the raw entries of the "mcpServers" or
// "servers" object.
func serverEntries(data []byte) (map[string]json.RawMessage, error) {
	// VS Code's files are JSON with comments and trailing commas. hujson, the format's own
	// parser, turns them into spaces and tells where a syntax error is.
	clean, err := hujson.Standardize(data)
	if err != nil {
		return nil, syntaxError(data, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(clean, &top); err != nil {
		return nil, errors.New("the file must be a JSON object")
	}
	a, hasA := top["mcpServers"]
	b, hasB := top["servers"]
	key, raw := "mcpServers", a
	switch {
	case hasA && hasB:
		return nil, errors.New(`both "mcpServers" and "servers" are set: keep one`)
	case hasB:
		key, raw = "servers", b
	case !hasA:
		return nil, errors.New(`no "mcpServers" (or VS Code's "servers") object`)
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil || entries == nil {
		return nil, fmt.Errorf("%q must be an object mapping names to servers", key)
	}
	return entries, nil
}

// syntaxError rewrites an error of hujson, "hujson: line L, column C (in bytes): reason". It
// becomes "invalid JSON at line L, column C (in characters): reason". A reason quoting an
// invalid literal keeps only its kind: the literal may be a token written in the file.
func syntaxError(data []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "hujson: ")
	var line, col int
	if _, scanErr := fmt.Sscanf(msg, "line %d, column %d:", &line, &col); scanErr != nil {
		return errors.New("invalid JSON")
	}
	_, reason, _ := strings.Cut(msg, ": ")
	if strings.HasPrefix(reason, "invalid literal") {
		reason = "invalid literal"
	}
	lines := bytes.SplitN(data, []byte("\n"), line+1)
	if line <= len(lines) && col-1 <= len(lines[line-1]) {
		col = utf8.RuneCount(lines[line-1][:col-1]) + 1
	}
	return fmt.Errorf("invalid JSON at line %d, column %d: %s", line, col, reason)
}

// entry is an entry of the configuration, its fields decoded.
type entry struct {
	typ, command, url, cwd, envFile string
	args, allow, deny               []string
	env, headers                    map[string]string
	disabled, optional, deferLoad   bool
	oauth                           *oauthEntry
	hints                           map[string]json.RawMessage // "toolAnnotations", by tool: annotations.go
	secrets                         []string                   // the values of the variables expanded
}

// serverOf builds the server of an entry, or tells that it is
// disabled.
func serverOf(name string, raw json.RawMessage, o *options) (s robby.MCPServer, skip bool, err error) {
	if name == "" {
		return s, false, errors.New("MCP server with an empty name")
	}
	e, err := decodeEntry(raw)
	if err == nil && !e.disabled {
		s, err = e.server(name, o)
	}
	if err != nil {
		return s, false, fmt.Errorf("MCP server %q: %w", name, err)
	}
	if e.disabled {
		return s, true, nil
	}
	return s, false, s.Validate() // as WithMCP will
}

// decodeEntry decodes the fields robby knows, with exact names and types. encoding/json alone
// would match names regardless of case. A disabled entry's other fields are left alone.
func decodeEntry(raw json.RawMessage) (entry, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return entry{}, errors.New("not a JSON object")
	}
	var e entry
	if err := decodeField(fields, "disabled", &e.disabled, "true or false"); err != nil || e.disabled {
		return e, err
	}
	for _, f := range []struct {
		key  string
		v    any
		want string
	}{
		{"type", &e.typ, "a string"},
		{"command", &e.command, "a string"},
		{"args", &e.args, "an array of strings"},
		{"env", &e.env, "an object of strings"},
		{"cwd", &e.cwd, "a string"},
		{"envFile", &e.envFile, "a string"},
		{"url", &e.url, "a string"},
		{"headers", &e.headers, "an object of strings"},
		{"optional", &e.optional, "true or false"},
		{"deferLoading", &e.deferLoad, "true or false"},
		{"allow", &e.allow, "an array of strings"},
		{"deny", &e.deny, "an array of strings"},
		{"toolAnnotations", &e.hints, "an object of tools' annotations"},
	} {
		if err := decodeField(fields, f.key, f.v, f.want); err != nil {
			return e, err
		}
	}
	var err error
	e.oauth, err = decodeOAuth(fields)
	return e, err
}

// decodeField decodes fields[key], if set and not null, into v.
func decodeField(fields map[string]json.RawMessage, key string, v any, want string) error {
	raw, ok := fields[key]
	if !ok {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%q must be %s", key, want)
	}
	return nil
}

// server builds the entry's server through the public constructors.
func (e entry) server(name string, o *options) (robby.MCPServer, error) {
	if err := e.check(); err != nil {
		return robby.MCPServer{}, err
	}
	stdio := e.command != "" // which a variable expanding to "" must not change
	if err := e.expand(); err != nil {
		return robby.MCPServer{}, err
	}
	if e.oauth != nil {
		if err := e.oauth.expand(&e); err != nil {
			return robby.MCPServer{}, err
		}
	}
	kind, err := e.kind(stdio)
	if err != nil {
		return robby.MCPServer{}, err
	}
	var s robby.MCPServer
	switch kind {
	case "stdio":
		s = robby.MCPCommand(name, e.command, e.args...).WithEnv(envList(e.env)...).WithDir(e.cwd)
	case "http":
		s = robby.MCPStreamableHTTP(name, e.url)
	case "sse":
		s = robby.MCPSSE(name, e.url)
	default:
		s = robby.MCPWebSocket(name, e.url)
	}
	for _, k := range slices.Sorted(maps.Keys(e.headers)) {
		s = s.WithHeader(k, e.headers[k])
	}
	s = s.WithAllow(e.allow...).WithDeny(e.deny...).WithSecrets(e.secrets...)
	if e.optional {
		s = s.WithOptional()
	}
	if e.deferLoad {
		s = s.WithDeferLoading()
	}
	if s, err = e.annotate(s); err != nil {
		return s, err
	}
	return withOAuth(s, kind, e.url, e.headers, e.oauth, o)
}

// check rejects entries that are not one kind of server, or whose fields do not fit their kind.
// It runs before any variable is expanded.
func (e entry) check() error {
	switch {
	case e.command == "" && e.url == "":
		return errors.New(`neither "command" nor "url" is set`)
	case e.command != "" && e.url != "":
		return errors.New(`both "command" and "url" are set: keep one`)
	case e.command != "" && len(e.headers) > 0:
		return errors.New(`"headers" are for a "url" server, not a "command"`)
	case e.url != "" && (len(e.env) > 0 || e.cwd != ""):
		return errors.New(`"env" and "cwd" are for a "command" server, not a "url"`)
	case e.envFile != "":
		return errors.New(`"envFile" is not supported: list the variables in "env"`)
	case e.allow != nil && len(e.allow) == 0:
		return errors.New(`"allow" is empty: leave it out to keep all tools`)
	}
	for _, k := range slices.Sorted(maps.Keys(e.env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("invalid environment variable name %q", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.headers)) {
		if !validHeaderName(k) {
			return fmt.Errorf("invalid header name %q", k)
		}
	}
	return nil
}

// validHeaderName reports whether k is an HTTP token (RFC 9110).
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range []byte(k) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// kind returns the kind of server the entry is: a command (stdio) or a url. It checks the
// entry's type against it.
func (e entry) kind(stdio bool) (string, error) {
	typ, err := typeKind(e.typ)
	if err != nil {
		return "", err
	}
	if stdio {
		if typ != "" && typ != "stdio" {
			return "", fmt.Errorf(`"type" %q needs a "url", not a "command"`, e.typ)
		}
		return "stdio", nil
	}
	if typ == "stdio" {
		return "", errors.New(`"type" "stdio" needs a "command", not a "url"`)
	}
	u, err := parseURL(e.url)
	if err != nil {
		return "", err
	}
	if typ == "" {
		return urlKind(u), nil
	}
	if typ != "websocket" && u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf(`"type" %q needs an http or https URL, not %s`, e.typ, u.Scheme)
	}
	return typ, nil
}

// typeKind returns the kind a "type" names, "" if none.
func typeKind(typ string) (string, error) {
	switch strings.ToLower(typ) {
	case "":
		return "", nil
	case "stdio":
		return "stdio", nil
	case "http", "streamable-http", "streamablehttp":
		return "http", nil
	case "sse":
		return "sse", nil
	case "ws", "websocket":
		return "websocket", nil
	}
	return "", fmt.Errorf(`unknown "type" %q: want stdio, http, sse or ws`, typ)
}

// urlKind infers the kind of a remote server from its URL. ws:// and wss:// are WebSocket, and
// a path ending in /sse is SSE. Any other is streamable HTTP.
func urlKind(u *url.URL) string {
	switch {
	case u.Scheme == "ws" || u.Scheme == "wss":
		return "websocket"
	case strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/sse"):
		return "sse"
	}
	return "http"
}

// parseURL parses an absolute http, https, ws or wss URL. Its errors
// leave out the URL, which may hold an expanded secret.
func parseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return nil, fmt.Errorf(`invalid "url": %w`, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ws" && u.Scheme != "wss":
		return nil, fmt.Errorf(`"url" must be an http, https, ws or wss URL, not %q`, u.Scheme)
	case u.Host == "":
		return nil, errors.New(`"url" has no host`)
	}
	return u, nil
}

// envList returns env as "KEY=value" strings sorted by key.
func envList(env map[string]string) []string {
	var list []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		list = append(list, k+"="+env[k])
	}
	return list
}
