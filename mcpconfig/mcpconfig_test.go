package mcpconfig

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/robby-go/robby"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// expected is what a test expects of an MCPServer built from a config.
type expected struct {
	name, kind, command, dir, url string
	args, env, allow, deny        []string
	header                        map[string]string
	optional, deferLoading        bool
	hints                         map[string]mcp.ToolAnnotations
	secrets                       []string // the values ${VAR} took from the environment
}

// server builds the server w describes with robby's constructors.
func (w expected) server() robby.MCPServer {
	var s robby.MCPServer
	switch w.kind {
	case "stdio":
		s = robby.MCPCommand(w.name, w.command, w.args...).WithEnv(w.env...).WithDir(w.dir)
	case "http":
		s = robby.MCPStreamableHTTP(w.name, w.url)
	case "sse":
		s = robby.MCPSSE(w.name, w.url)
	case "websocket":
		s = robby.MCPWebSocket(w.name, w.url)
	}
	for _, k := range slices.Sorted(maps.Keys(w.header)) {
		s = s.WithHeader(k, w.header[k])
	}
	s = s.WithAllow(w.allow...).WithDeny(w.deny...)
	if w.optional {
		s = s.WithOptional()
	}
	if w.deferLoading {
		s = s.WithDeferLoading()
	}
	for _, tool := range slices.Sorted(maps.Keys(w.hints)) {
		s = s.WithToolAnnotations(tool, w.hints[tool])
	}
	if w.secrets != nil {
		s = s.WithSecrets(w.secrets...)
	}
	return s
}

func assertMCPServers(t *testing.T, want []expected, got []robby.MCPServer) {
	t.Helper()
	require.Len(t, got, len(want))
	for i, w := range want {
		assert.Equal(t, w.server(), got[i], w.name)
		assert.NoError(t, got[i].Validate(), w.name)
	}
}

func TestLoadFormats(t *testing.T) {
	yes := true
	t.Setenv("GITHUB_TOKEN", "ghp_secret")
	t.Setenv("CONTEXT7_API_KEY", "ctx7")
	t.Setenv("PERPLEXITY_API_KEY", "pplx")
	t.Setenv("API_KEY", "k3y")
	t.Setenv("API_BASE_URL", "") // restored after the test
	require.NoError(t, os.Unsetenv("API_BASE_URL"))
	t.Setenv("DEBUG", "")
	tests := []struct {
		file string
		want []expected
	}{{
		file: "claude_desktop.json",
		want: []expected{{
			name: "filesystem", kind: "stdio", command: "npx",
			args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/Users/username/Desktop", "/Users/username/Downloads"},
		}, {
			name: "github", kind: "stdio", command: "docker",
			args: []string{"run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"},
			env:  []string{"GITHUB_PERSONAL_ACCESS_TOKEN=ghp_secret"}, secrets: []string{"ghp_secret"},
		}, {
			name: "sqlite", kind: "stdio", command: "uvx",
			args: []string{"mcp-server-sqlite", "--db-path", "/Users/username/test.db"},
			dir:  "/Users/username",
		}},
	}, {
		file: "cursor.json", // puppeteer is disabled
		want: []expected{{
			name: "context7", kind: "http", url: "https://mcp.context7.com/mcp",
			header: map[string]string{"Context7_api_key": "ctx7"}, secrets: []string{"ctx7"},
		}, {
			name: "legacy", kind: "sse", url: "http://localhost:8000/sse",
		}, {
			name: "realtime", kind: "websocket", url: "wss://example.com/mcp",
		}},
	}, {
		file: "vscode.json", // comments, trailing commas, inputs
		want: []expected{{
			name: "events", kind: "sse", url: "http://localhost:3001/events",
		}, {
			name: "github", kind: "http", url: "https://api.githubcopilot.com/mcp/",
		}, {
			name: "perplexity", kind: "stdio", command: "npx",
			args: []string{"-y", "server-perplexity-ask"},
			env:  []string{"PERPLEXITY_API_KEY=pplx"}, secrets: []string{"pplx"},
		}},
	}, {
		file: "claude_code.json", // ${VAR:-default}, literal $
		want: []expected{{
			name: "api-server", kind: "http", url: "https://api.example.com/mcp",
			header: map[string]string{"Authorization": "Bearer k3y"}, secrets: []string{"k3y"},
		}, {
			name: "my-tool", kind: "stdio", command: "node",
			args: []string{"./my-mcp-server.js"},
			env:  []string{"DEBUG=false", "PRICE=$5"},
		}},
	}, {
		file: "robby.json",
		want: []expected{{
			name: "docker", kind: "stdio", command: "docker",
			args: []string{"mcp", "gateway", "run"}, optional: true,
			allow: []string{"search", "fetch"},
		}, {
			name: "remote", kind: "http", url: "http://localhost:3001/mcp",
			deny: []string{"delete_everything"}, deferLoading: true,
			hints: map[string]mcp.ToolAnnotations{
				"write_file": {IdempotentHint: true, DestructiveHint: &yes},
				"search":     {ReadOnlyHint: true},
			},
		}},
	}}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := Load(filepath.Join("testdata", tt.file))
			require.NoError(t, err)
			assertMCPServers(t, tt.want, got)
		})
	}
}

func TestParseTypes(t *testing.T) {
	tests := []struct {
		name, entry, kind string
	}{
		{"no type, /mcp", `{"url": "https://example.com/mcp"}`, "http"},
		{"no type, /sse", `{"url": "https://example.com/sse"}`, "sse"},
		{"no type, /sse/", `{"url": "https://example.com/v1/sse/"}`, "sse"},
		{"no type, /sse?query", `{"url": "https://example.com/sse?key=1"}`, "sse"},
		{"no type, sse elsewhere", `{"url": "https://sse.example.com/mcp?t=/sse"}`, "http"},
		{"no type, ssefoo", `{"url": "https://example.com/ssefoo"}`, "http"},
		{"no type, ws", `{"url": "ws://localhost:3001/mcp"}`, "websocket"},
		{"no type, wss", `{"url": "WSS://example.com/sse"}`, "websocket"},
		{"no type, command", `{"command": "npx"}`, "stdio"},
		{"stdio", `{"type": "stdio", "command": "npx"}`, "stdio"},
		{"http", `{"type": "http", "url": "https://example.com/sse"}`, "http"},
		{"streamable-http", `{"type": "streamable-http", "url": "https://example.com/x"}`, "http"},
		{"streamableHttp", `{"type": "streamableHttp", "url": "https://example.com/x"}`, "http"},
		{"sse", `{"type": "sse", "url": "https://example.com/events"}`, "sse"},
		{"SSE", `{"type": "SSE", "url": "https://example.com/events"}`, "sse"},
		{"ws", `{"type": "ws", "url": "ws://example.com/x"}`, "websocket"},
		{"websocket over https", `{"type": "websocket", "url": "https://example.com/x"}`, "websocket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(`{"mcpServers": {"s": ` + tt.entry + `}}`))
			require.NoError(t, err)
			var e struct{ URL, Command string }
			require.NoError(t, json.Unmarshal([]byte(tt.entry), &e))
			assertMCPServers(t, []expected{{name: "s", kind: tt.kind, url: e.URL, command: e.Command}}, got)
		})
	}
}

func TestParseEnvExpansion(t *testing.T) {
	t.Setenv("MCPCONFIG_A", "alpha")
	t.Setenv("MCPCONFIG_EMPTY", "")
	tests := []struct {
		in, want string
	}{
		{"${MCPCONFIG_A}", "alpha"},
		{"${env:MCPCONFIG_A}", "alpha"},
		{"x-${MCPCONFIG_A}-${env:MCPCONFIG_A}-y", "x-alpha-alpha-y"},
		{"$MCPCONFIG_A", "$MCPCONFIG_A"},
		{"$", "$"},
		{"a$b$$c", "a$b$$c"},
		{"$${MCPCONFIG_A}", "$alpha"},
		{"${MCPCONFIG_EMPTY}", ""},
		{"${MCPCONFIG_EMPTY:-dflt}", "dflt"},
		{"${MCPCONFIG_UNSET_X:-dflt}", "dflt"},
		{"${MCPCONFIG_UNSET_X:-}", ""},
		{"${env:MCPCONFIG_UNSET_X:-d}", "d"},
		{"${MCPCONFIG_A:-dflt}", "alpha"},
		{"}{", "}{"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := expandVars(tt.in, new([]string))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}

	t.Run("every field", func(t *testing.T) {
		got, err := Parse([]byte(`{"mcpServers": {
			"cmd": {"command": "${MCPCONFIG_A}", "args": ["--x=${MCPCONFIG_A}", "$HOME"],
				"env": {"B": "${MCPCONFIG_A}", "A": "1"}, "cwd": "/tmp/${MCPCONFIG_A}"},
			"web": {"url": "https://${MCPCONFIG_A}.example.com/mcp", "headers": {"X-Key": "${env:MCPCONFIG_A}"}}
		}}`))
		require.NoError(t, err)
		assertMCPServers(t, []expected{{
			name: "cmd", kind: "stdio", command: "alpha", args: []string{"--x=alpha", "$HOME"},
			env: []string{"A=1", "B=alpha"}, dir: "/tmp/alpha", secrets: []string{"alpha"},
		}, {
			name: "web", kind: "http", url: "https://alpha.example.com/mcp",
			header: map[string]string{"X-Key": "alpha"}, secrets: []string{"alpha"},
		}}, got)
	})
}

func TestParseOrderAndSkips(t *testing.T) {
	got, err := Parse([]byte(`{
		"inputs": [{"type": "promptString", "id": "key", "password": true}],
		"servers": {
			"zeta": {"command": "z"},
			"Alpha": {"command": "A"},
			"alpha": {"command": "a", "disabled": false},
			"off": {"command": 42, "disabled": true},
			"mid": {"url": "http://localhost/mcp", "alwaysAllow": ["x"], "timeout": 60}
		}
	}`))
	require.NoError(t, err)
	var names []string
	for _, s := range got {
		names = append(names, s.Name())
	}
	assert.Equal(t, []string{"Alpha", "alpha", "mid", "zeta"}, names)

	got, err = Parse([]byte(`{"mcpServers": {}}`))
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestParseErrors(t *testing.T) {
	t.Setenv("MCPCONFIG_SECRET", "hunter2")
	t.Setenv("MCPCONFIG_EMPTY", "")
	tests := []struct {
		name, config, want string
	}{
		{"invalid JSON", "{\n  \"mcpServers\": {\n    \"a\": x\n}}", "invalid JSON at line 3, column 10: invalid literal"},
		{"secret as a bare word", "{\"mcpServers\": {\"a\": {\"url\": \"http://h\", \"headers\": {\"K\": hunter2}}}}", "invalid JSON at line 1, column 59: invalid literal"},
		{"secret with a bad escape", `{"mcpServers": {"a": {"url": "http://h", "headers": {"K": "hunter2\q"}}}}`, "invalid JSON at line 1, column 59: invalid literal"},
		{"column in characters", "{\"mcpServers\": {\"é\": x}}", "invalid JSON at line 1, column 22"},
		{"truncated", `{"mcpServers": {`, "invalid JSON at line 1"},
		{"empty file", ``, "invalid JSON at line 1, column 1"},
		{"not an object", `["mcpServers"]`, "the file must be a JSON object"},
		{"no servers", `{"servers2": {}}`, `no "mcpServers" (or VS Code's "servers") object`},
		{"both keys", `{"mcpServers": {}, "servers": {}}`, `both "mcpServers" and "servers" are set`},
		{"servers not object", `{"servers": []}`, `"servers" must be an object mapping names to servers`},
		{"servers null", `{"mcpServers": null}`, `"mcpServers" must be an object`},
		{"empty name", `{"mcpServers": {"": {"command": "x"}}}`, "MCP server with an empty name"},
		{"entry not object", `{"mcpServers": {"bad": "npx"}}`, `MCP server "bad": not a JSON object`},
		{"entry null", `{"mcpServers": {"bad": null}}`, `MCP server "bad": not a JSON object`},
		{"neither", `{"mcpServers": {"bad": {"args": ["x"]}}}`, `MCP server "bad": neither "command" nor "url" is set`},
		{"both", `{"mcpServers": {"bad": {"command": "x", "url": "http://h/mcp"}}}`, `MCP server "bad": both "command" and "url" are set`},
		{"unknown type", `{"mcpServers": {"bad": {"type": "grpc", "url": "http://h/mcp"}}}`, `MCP server "bad": unknown "type" "grpc"`},
		{"unknown type with command", `{"mcpServers": {"bad": {"type": "local", "command": "x"}}}`, `MCP server "bad": unknown "type" "local"`},
		{"http type with command", `{"mcpServers": {"bad": {"type": "http", "command": "x"}}}`, `MCP server "bad": "type" "http" needs a "url"`},
		{"stdio type with url", `{"mcpServers": {"bad": {"type": "stdio", "url": "http://h/mcp"}}}`, `MCP server "bad": "type" "stdio" needs a "command"`},
		{"sse type with ws url", `{"mcpServers": {"bad": {"type": "sse", "url": "ws://h/sse"}}}`, `MCP server "bad": "type" "sse" needs an http or https URL`},
		{"args not array", `{"mcpServers": {"bad": {"command": "x", "args": "-y"}}}`, `MCP server "bad": "args" must be an array of strings`},
		{"args not strings", `{"mcpServers": {"bad": {"command": "x", "args": [1]}}}`, `MCP server "bad": "args" must be an array of strings`},
		{"env not strings", `{"mcpServers": {"bad": {"command": "x", "env": {"PORT": 80}}}}`, `MCP server "bad": "env" must be an object of strings`},
		{"headers as list", `{"mcpServers": {"bad": {"url": "http://h/mcp", "headers": ["A: b"]}}}`, `MCP server "bad": "headers" must be an object of strings`},
		{"command not string", `{"mcpServers": {"bad": {"command": ["npx"]}}}`, `MCP server "bad": "command" must be a string`},
		{"type not string", `{"mcpServers": {"bad": {"command": "x", "type": 1}}}`, `MCP server "bad": "type" must be a string`},
		{"disabled not bool", `{"mcpServers": {"bad": {"command": "x", "disabled": "yes"}}}`, `MCP server "bad": "disabled" must be true or false`},
		{"optional not bool", `{"mcpServers": {"bad": {"command": "x", "optional": 1}}}`, `MCP server "bad": "optional" must be true or false`},
		{"deferLoading not bool", `{"mcpServers": {"bad": {"command": "x", "deferLoading": "yes"}}}`, `MCP server "bad": "deferLoading" must be true or false`},
		{"toolAnnotations not object", `{"mcpServers": {"bad": {"command": "x", "toolAnnotations": ["a"]}}}`, `MCP server "bad": "toolAnnotations" must be an object of tools' annotations`},
		{"tool annotation misspelt", `{"mcpServers": {"bad": {"command": "x", "toolAnnotations": {"rm": {"destructivehint": true}}}}}`, `MCP server "bad": "toolAnnotations" of "rm": unknown field "destructivehint"; MCP tool annotations are readOnlyHint,`},
		{"tool annotation null", `{"mcpServers": {"bad": {"command": "x", "toolAnnotations": {"rm": null}}}}`, `MCP server "bad": "toolAnnotations" of "rm" must be an object`},
		{"deny not strings", `{"mcpServers": {"bad": {"command": "x", "deny": "rm"}}}`, `MCP server "bad": "deny" must be an array of strings`},
		{"empty allow", `{"mcpServers": {"bad": {"command": "x", "allow": []}}}`, `MCP server "bad": "allow" is empty`},
		{"unset variable", `{"mcpServers": {"bad": {"command": "x", "env": {"K": "${MCPCONFIG_UNSET_Y}"}}}}`, `MCP server "bad": "env" "K": environment variable MCPCONFIG_UNSET_Y is not set`},
		{"unset env: variable", `{"mcpServers": {"bad": {"url": "https://h/${env:MCPCONFIG_UNSET_Y}"}}}`, `MCP server "bad": "url": environment variable MCPCONFIG_UNSET_Y is not set`},
		{"unset in args", `{"mcpServers": {"bad": {"command": "x", "args": ["a", "${MCPCONFIG_UNSET_Y}"]}}}`, `MCP server "bad": "args"[1]: environment variable MCPCONFIG_UNSET_Y is not set`},
		{"unset in header", `{"mcpServers": {"bad": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${MCPCONFIG_UNSET_Y}"}}}}`, `MCP server "bad": "headers" "Authorization": environment variable MCPCONFIG_UNSET_Y is not set`},
		{"unterminated variable", `{"mcpServers": {"bad": {"command": "${MCPCONFIG_SECRET"}}}`, `MCP server "bad": "command": unterminated ${`},
		{"empty variable name", `{"mcpServers": {"bad": {"command": "${}"}}}`, `MCP server "bad": "command": ${}: no variable name`},
		{"VS Code input", `{"servers": {"bad": {"url": "https://h/mcp", "headers": {"K": "${input:key}"}}}}`, `MCP server "bad": "headers" "K": ${input:key}: VS Code inputs are not supported`},
		{"command empty after expansion", `{"mcpServers": {"bad": {"command": "${MCPCONFIG_EMPTY}"}}}`, `MCP server "bad": no command`},
		{"bad scheme", `{"mcpServers": {"bad": {"url": "ftp://h/mcp"}}}`, `MCP server "bad": "url" must be an http, https, ws or wss URL, not "ftp"`},
		{"relative url", `{"mcpServers": {"bad": {"url": "/mcp"}}}`, `MCP server "bad": "url" must be an http, https, ws or wss URL`},
		{"no host", `{"mcpServers": {"bad": {"url": "http:///mcp"}}}`, `MCP server "bad": "url" has no host`},
		{"unparsable url", `{"mcpServers": {"bad": {"url": "http://[::1/${MCPCONFIG_SECRET}"}}}`, `MCP server "bad": invalid "url"`},
		{"headers on command", `{"mcpServers": {"bad": {"command": "x", "headers": {"A": "b"}}}}`, `MCP server "bad": "headers" are for a "url" server`},
		{"env on url", `{"mcpServers": {"bad": {"url": "http://h/mcp", "env": {"A": "b"}}}}`, `MCP server "bad": "env" and "cwd" are for a "command" server`},
		{"envFile", `{"servers": {"bad": {"command": "x", "envFile": "${workspaceFolder}/.env"}}}`, `MCP server "bad": "envFile" is not supported`},
		{"bad env name", `{"mcpServers": {"bad": {"command": "x", "env": {"A=B": "c"}}}}`, `MCP server "bad": invalid environment variable name "A=B"`},
		{"bad header name", `{"mcpServers": {"bad": {"url": "http://h/mcp", "headers": {"Bad Name": "c"}}}}`, `MCP server "bad": invalid header name "Bad Name"`},
		{"header line break", `{"mcpServers": {"bad": {"url": "http://h/mcp", "headers": {"A": "b\r\nEvil: 1"}}}}`, `MCP server "bad": "headers" "A": value has a line break`},
		{"first bad entry in order", `{"mcpServers": {"z": {}, "b": {}, "a": {"command": "x"}}}`, `MCP server "b": neither`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.config))
			require.Error(t, err)
			assert.Nil(t, got)
			assert.True(t, strings.HasPrefix(err.Error(), "mcpconfig: "), err.Error())
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "hunter2", "a secret leaked")
		})
	}
}

func TestLoadErrors(t *testing.T) {
	t.Run("not found", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "nope.json")
		_, err := Load(path)
		require.Error(t, err)
		assert.True(t, errors.Is(err, fs.ErrNotExist))
		assert.Equal(t, "mcpconfig: "+path+": no such file or directory", err.Error())
	})
	t.Run("syntax error", func(t *testing.T) {
		path := filepath.Join("testdata", "broken.json")
		_, err := Load(path)
		require.Error(t, err)
		assert.True(t, strings.HasPrefix(err.Error(), "mcpconfig: "+path+": invalid JSON at line 5, column 7: "), err.Error())
	})
	t.Run("bad entry", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "mcp.json")
		require.NoError(t, os.WriteFile(path, []byte(`{"mcpServers": {"x": {"command": "a", "url": "http://h"}}}`), 0o600))
		_, err := Load(path)
		require.Error(t, err)
		assert.Equal(t, "mcpconfig: "+path+`: MCP server "x": both "command" and "url" are set: keep one`, err.Error())
	})
}

func TestParseJSONC(t *testing.T) {
	got, err := Parse([]byte(`// leading comment
	{
		"servers": { /* block
		comment */
			"a": {"command": "x", "args": ["//not a comment", "/*nor this*/", "\"//\"", ",]"],},
		},
	}`))
	require.NoError(t, err)
	assertMCPServers(t, []expected{{name: "a", kind: "stdio", command: "x",
		args: []string{"//not a comment", "/*nor this*/", `"//"`, ",]"}}}, got)

	_, err = Parse([]byte("{\"servers\": {} /* unterminated"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid JSON at line 1, column 16")
}

func TestParseUsableByWithMCP(t *testing.T) {
	servers, err := Load(filepath.Join("testdata", "robby.json"))
	require.NoError(t, err)
	require.Len(t, servers, 2)
	for _, s := range servers {
		assert.NoError(t, s.Validate(), "WithMCP takes it")
	}
}

func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(f, err)
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte(`{"servers": {"a": {"url": "ws://h/${X:-y}"}, "b": {"command": "c", "disabled": true}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		servers, err := Parse(data)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "mcpconfig: "), err.Error())
			return
		}
		for i, s := range servers {
			require.NotEmpty(t, s.Name())
			require.NoError(t, s.Validate())
			if i > 0 {
				require.Less(t, servers[i-1].Name(), s.Name())
			}
		}
	})
}
