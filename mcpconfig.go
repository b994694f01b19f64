package robby

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
)

// LoadMCPConfig reads the MCP servers of a configuration file in the
// format Claude Desktop (claude_desktop_config.json), Claude Code
// (.mcp.json), Cursor (.cursor/mcp.json) and VS Code (.vscode/mcp.json)
// share, so that an agent uses the servers already set up for those tools:
//
//	servers, err := robby.LoadMCPConfig(".vscode/mcp.json")
//	if err != nil {
//		log.Fatal(err)
//	}
//	agent, err := robby.New(robby.WithMCP(servers...), ...)
//
// See [ParseMCPConfig] for the format. An error names the file and the
// faulty server; a file that does not exist gives an error for which
// errors.Is(err, fs.ErrNotExist) holds.
func LoadMCPConfig(path string) ([]MCPServer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			err = pe.Err // the path is in the prefix already
		}
		return nil, fmt.Errorf("robby: MCP config %s: %w", path, err)
	}
	servers, err := parseMCPConfig(data)
	if err != nil {
		return nil, fmt.Errorf("robby: MCP config %s: %w", path, err)
	}
	return servers, nil
}

// ParseMCPConfig is [LoadMCPConfig] for a configuration held in memory.
//
// The servers are under the top-level key "mcpServers" (Claude Desktop,
// Claude Code, Cursor) or "servers" (VS Code, whose "inputs" are ignored).
// Each maps a server's name to either a command run as a subprocess:
//
//	"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
//		"env": {"DEBUG": "1"}, "cwd": "/srv"}
//
// or a remote server:
//
//	"remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
//
// A remote server's "type" is "http" (or "streamable-http",
// "streamableHttp"), "sse", or "ws" (or "websocket"); without a type, a URL
// whose path ends in /sse is an SSE server, a ws:// or wss:// URL a
// WebSocket one, and any other a streamable HTTP one. A command's type, if
// given, is "stdio". An entry with "disabled": true is skipped; robby also
// reads "optional": true, "allow" and "deny" (lists of tool names), as
// [MCPServer.Optional], [MCPServer.WithAllow] and [MCPServer.WithDeny]. Other
// fields are ignored, as tools add their own.
//
// ${VAR}, ${env:VAR} and ${VAR:-default} in the command, args, cwd, env
// values, url and header values are replaced with the program's
// environment variable, so that secrets stay out of the file; a variable
// that is not set, and has no default, is an error. A $ not followed by {
// is kept as is. Comments and trailing commas, which VS Code allows, are
// accepted.
//
// The servers are returned sorted by name, as JSON objects have no order.
func ParseMCPConfig(data []byte) ([]MCPServer, error) {
	servers, err := parseMCPConfig(data)
	if err != nil {
		return nil, fmt.Errorf("robby: MCP config: %w", err)
	}
	return servers, nil
}

func parseMCPConfig(data []byte) ([]MCPServer, error) {
	entries, err := mcpConfigEntries(data)
	if err != nil {
		return nil, err
	}
	var servers []MCPServer
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		s, skip, err := mcpConfigServer(name, entries[name])
		if err != nil {
			return nil, err
		}
		if !skip {
			servers = append(servers, s)
		}
	}
	return servers, nil
}

// mcpConfigEntries returns the raw entries of the "mcpServers" or
// "servers" object.
func mcpConfigEntries(data []byte) (map[string]json.RawMessage, error) {
	clean := stripJSONC(data)
	var top map[string]json.RawMessage
	if err := json.Unmarshal(clean, &top); err != nil {
		return nil, mcpJSONError(data, err, "the file must be a JSON object")
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

// mcpJSONError tells where in data a syntax error is, or else what.
func mcpJSONError(data []byte, err error, what string) error {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		line, col := jsonPosition(data, se.Offset)
		return fmt.Errorf("invalid JSON at line %d, column %d: %w", line, col, se)
	}
	return errors.New(what)
}

// jsonPosition returns the 1-based line and column (in characters) of the
// byte at which the decoder stopped, offset bytes into data.
func jsonPosition(data []byte, offset int64) (line, col int) {
	i := int(min(max(offset-1, 0), int64(len(data))))
	before := data[:i]
	start := bytes.LastIndexByte(before, '\n') + 1
	return bytes.Count(before, []byte{'\n'}) + 1, utf8.RuneCount(before[start:]) + 1
}

// mcpEntry is an entry of the configuration, its fields decoded.
type mcpEntry struct {
	typ, command, url, cwd, envFile string
	args, allow, deny               []string
	env, headers                    map[string]string
	disabled, optional              bool
}

// mcpConfigServer builds the server of an entry, or tells that it is
// disabled.
func mcpConfigServer(name string, raw json.RawMessage) (s MCPServer, skip bool, err error) {
	if name == "" {
		return s, false, errors.New("MCP server with an empty name")
	}
	e, err := decodeMCPEntry(raw)
	if err == nil && !e.disabled {
		s, err = e.server(name)
	}
	if err != nil {
		return s, false, fmt.Errorf("MCP server %q: %w", name, err)
	}
	if e.disabled {
		return s, true, nil
	}
	return s, false, s.validate() // as WithMCP will
}

// decodeMCPEntry decodes the fields robby knows, with exact names and
// types: encoding/json alone would match names regardless of case. A
// disabled entry's other fields are left alone.
func decodeMCPEntry(raw json.RawMessage) (mcpEntry, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return mcpEntry{}, errors.New("not a JSON object")
	}
	var e mcpEntry
	if err := decodeMCPField(fields, "disabled", &e.disabled, "true or false"); err != nil || e.disabled {
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
		{"allow", &e.allow, "an array of strings"},
		{"deny", &e.deny, "an array of strings"},
	} {
		if err := decodeMCPField(fields, f.key, f.v, f.want); err != nil {
			return e, err
		}
	}
	return e, nil
}

// decodeMCPField decodes fields[key], if set and not null, into v.
func decodeMCPField(fields map[string]json.RawMessage, key string, v any, want string) error {
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
func (e mcpEntry) server(name string) (MCPServer, error) {
	if err := e.check(); err != nil {
		return MCPServer{}, err
	}
	stdio := e.command != "" // which a variable expanding to "" must not change
	if err := e.expand(); err != nil {
		return MCPServer{}, err
	}
	kind, err := e.kind(stdio)
	if err != nil {
		return MCPServer{}, err
	}
	var s MCPServer
	switch kind {
	case "stdio":
		s = MCPCommand(name, e.command, e.args...).WithEnv(mcpEnvList(e.env)...).WithDir(e.cwd)
	case "http":
		s = MCPStreamableHTTP(name, e.url)
	case "sse":
		s = MCPSSE(name, e.url)
	default:
		s = MCPWebSocket(name, e.url)
	}
	for _, k := range slices.Sorted(maps.Keys(e.headers)) {
		s = s.WithHeader(k, e.headers[k])
	}
	s = s.WithAllow(e.allow...).WithDeny(e.deny...)
	if e.optional {
		s = s.Optional()
	}
	return s, nil
}

// check rejects entries that are not one kind of server or whose fields
// do not fit their kind, before any variable is expanded.
func (e mcpEntry) check() error {
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
		if !validMCPHeaderName(k) {
			return fmt.Errorf("invalid header name %q", k)
		}
	}
	return nil
}

// validMCPHeaderName reports whether k is an HTTP token (RFC 9110).
func validMCPHeaderName(k string) bool {
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

// expand replaces the variables in the entry's strings.
func (e *mcpEntry) expand() error {
	for _, f := range []struct {
		s     *string
		where string
	}{{&e.command, `"command"`}, {&e.url, `"url"`}, {&e.cwd, `"cwd"`}} {
		if err := expandMCPField(f.s, f.where); err != nil {
			return err
		}
	}
	for i := range e.args {
		if err := expandMCPField(&e.args[i], fmt.Sprintf(`"args"[%d]`, i)); err != nil {
			return err
		}
	}
	if err := expandMCPMap(e.env, "env"); err != nil {
		return err
	}
	if err := expandMCPMap(e.headers, "headers"); err != nil {
		return err
	}
	return checkMCPHeaderValues(e.headers)
}

// expandMCPField replaces the variables in *s, saying where they were.
func expandMCPField(s *string, where string) error {
	v, err := expandMCPVars(*s)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	*s = v
	return nil
}

// expandMCPMap replaces the variables in the values of m, in key order.
func expandMCPMap(m map[string]string, name string) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if err := expandMCPField(&v, fmt.Sprintf("%q %q", name, k)); err != nil {
			return err
		}
		m[k] = v
	}
	return nil
}

// checkMCPHeaderValues rejects values that would split a header, which the
// HTTP client would refuse only when connecting.
func checkMCPHeaderValues(h map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if strings.ContainsAny(h[k], "\r\n\x00") {
			return fmt.Errorf(`"headers" %q: value has a line break or NUL`, k)
		}
	}
	return nil
}

// expandMCPVars replaces ${VAR}, ${env:VAR} and ${VAR:-default} with the
// environment's values. Unlike [os.ExpandEnv], it leaves $VAR and a lone $
// alone, and fails on a variable that is not set.
func expandMCPVars(s string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", errors.New("unterminated ${") // the value may be a secret
		}
		v, err := lookupMCPVar(s[i+2 : i+j])
		if err != nil {
			return "", err
		}
		b.WriteString(s[:i])
		b.WriteString(v)
		s = s[i+j+1:]
	}
}

// lookupMCPVar returns the value of a variable reference, the text between
// ${ and }.
func lookupMCPVar(ref string) (string, error) {
	if strings.HasPrefix(ref, "input:") {
		return "", fmt.Errorf("${%s}: VS Code inputs are not supported: use ${env:NAME}", ref)
	}
	name, def, hasDef := strings.Cut(strings.TrimPrefix(ref, "env:"), ":-")
	if name == "" {
		return "", fmt.Errorf("${%s}: no variable name", ref)
	}
	if v, ok := os.LookupEnv(name); ok && (v != "" || !hasDef) {
		return v, nil
	}
	if hasDef {
		return def, nil
	}
	return "", fmt.Errorf("environment variable %s is not set", name)
}

// kind returns the kind of server the entry is, a command (stdio) or a
// url, checking its type against that.
func (e mcpEntry) kind(stdio bool) (string, error) {
	typ, err := mcpType(e.typ)
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
	u, err := parseMCPURL(e.url)
	if err != nil {
		return "", err
	}
	if typ == "" {
		return mcpURLKind(u), nil
	}
	if typ != "websocket" && u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf(`"type" %q needs an http or https URL, not %s`, e.typ, u.Scheme)
	}
	return typ, nil
}

// mcpType returns the kind a "type" names, "" if none.
func mcpType(typ string) (string, error) {
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

// mcpURLKind infers the kind of a remote server from its URL: ws:// and
// wss:// are WebSocket, a path ending in /sse is SSE, and any other is
// streamable HTTP.
func mcpURLKind(u *url.URL) string {
	switch {
	case u.Scheme == "ws" || u.Scheme == "wss":
		return "websocket"
	case strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/sse"):
		return "sse"
	}
	return "http"
}

// parseMCPURL parses an absolute http, https, ws or wss URL. Its errors
// leave out the URL, which may hold an expanded secret.
func parseMCPURL(s string) (*url.URL, error) {
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

// mcpEnvList returns env as "KEY=value" strings sorted by key.
func mcpEnvList(env map[string]string) []string {
	var list []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		list = append(list, k+"="+env[k])
	}
	return list
}

// stripJSONC blanks out the comments and trailing commas of JSON with
// comments (JSONC, which VS Code's files are), keeping every other byte
// where it is so that error positions stay right.
func stripJSONC(data []byte) []byte {
	out := bytes.Clone(data)
	for i := 0; i < len(out); i++ {
		switch {
		case out[i] == '"':
			i = jsoncStringEnd(out, i)
		case bytes.HasPrefix(out[i:], []byte("//")):
			i = jsoncBlank(out, i, i+jsoncLineEnd(out[i:])) - 1
		case bytes.HasPrefix(out[i:], []byte("/*")):
			if end := bytes.Index(out[i+2:], []byte("*/")); end >= 0 {
				i = jsoncBlank(out, i, i+2+end+2) - 1
			}
		}
	}
	for i := 0; i < len(out); i++ {
		switch out[i] {
		case '"':
			i = jsoncStringEnd(out, i)
		case ',':
			rest := bytes.TrimLeft(out[i+1:], " \t\r\n")
			if len(rest) > 0 && (rest[0] == '}' || rest[0] == ']') {
				out[i] = ' '
			}
		}
	}
	return out
}

// jsoncStringEnd returns the index of the quote closing the string that
// opens at data[i], or the last index if it is not closed.
func jsoncStringEnd(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(data) - 1
}

// jsoncLineEnd returns the index of the first newline in data, or its
// length.
func jsoncLineEnd(data []byte) int {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i
	}
	return len(data)
}

// jsoncBlank replaces data[from:to] with spaces, but for line breaks,
// and returns to.
func jsoncBlank(data []byte, from, to int) int {
	for i := from; i < to; i++ {
		if data[i] != '\n' && data[i] != '\r' {
			data[i] = ' '
		}
	}
	return to
}
