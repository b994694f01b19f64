package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

const citySchema = `{
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "population": {"type": "integer", "minimum": 0}
  },
  "required": ["name", "population"],
  "additionalProperties": false
}`

func schemaFile(t *testing.T, schema string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "schema.json")
	require.NoError(t, os.WriteFile(path, []byte(schema), 0o600))
	return path
}

// runSchema runs robby run -schema with args and returns stdout, stderr
// and the exit status.
func runSchema(t *testing.T, srv *robbytest.Server, schema string, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	full := append([]string{"run", "-base-url", srv.URL, "-schema", schemaFile(t, schema)}, args...)
	err := run(t.Context(), append(full, "Describe Paris"), nil, &stdout, &stderr)
	code := exitCode(err, &stderr)
	return stdout.String(), stderr.String(), code
}

// TestRunSchemaPrintsOnlyTheAnswer: robby run -schema prints the answer,
// one line of JSON, and nothing else on stdout, in every mode.
func TestRunSchemaPrintsOnlyTheAnswer(t *testing.T) {
	answer := `{"name": "Paris",
  "population": 2102650}`
	for _, mode := range []string{"auto", "native", "tool", "prompted"} {
		t.Run(mode, func(t *testing.T) {
			srv := upstream(t, robbytest.Answer(answer))
			stdout, stderr, code := runSchema(t, srv, citySchema, "-answer-mode", mode)
			require.Equal(t, 0, code, stderr)
			assert.Equal(t, `{"name":"Paris","population":2102650}`+"\n", stdout)
			req := srv.Requests()[0]
			assert.Equal(t, mode == "auto" || mode == "native", robbytest.AsksJSONSchema(req), "response_format")
			assert.Equal(t, mode == "tool", strings.Contains(strings.Join(req.Tools, " "), "final_answer"))
		})
	}
}

// TestRunSchemaRepairs: an answer that does not fit is sent back with what
// is wrong; only the repaired one is printed.
func TestRunSchemaRepairs(t *testing.T) {
	srv := upstream(t, robbytest.Answer(`{"name": "Paris", "population": -1}`), robbytest.Answer(`{"name": "Paris", "population": 2102650}`))
	stdout, stderr, code := runSchema(t, srv, citySchema)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, `{"name":"Paris","population":2102650}`+"\n", stdout)
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	last := reqs[1].Messages[len(reqs[1].Messages)-1].Content
	assert.Contains(t, last, "/population: must be at least 0, got -1")
}

// TestRunSchemaFallsBack: an endpoint that refuses response_format gets
// the answer tool instead.
func TestRunSchemaFallsBack(t *testing.T) {
	srv := upstream(t, robbytest.SchemaRefusal(robbytest.Ollama), robbytest.Answer(`{"name": "Paris", "population": 1}`))
	stdout, stderr, code := runSchema(t, srv, citySchema)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, `{"name":"Paris","population":1}`+"\n", stdout)
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Contains(t, reqs[1].Tools, "final_answer")
}

// TestRunSchemaFails: an answer that never fits, and a bad schema file,
// print nothing on stdout, say why on stderr and exit 1.
func TestRunSchemaFails(t *testing.T) {
	bad := robbytest.Answer(`{"name": "Paris"}`)
	srv := upstream(t, bad, bad)
	stdout, stderr, code := runSchema(t, srv, citySchema, "-max-repairs", "1")
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, `the answer does not fit the schema after 2 answers (native mode): /: missing required field "population"`)
	assert.Contains(t, stderr, `the last answer: {"name": "Paris"}`)

	for schema, want := range map[string]string{
		`{"type": "object"`:  "not a JSON Schema object",
		`{"type": "string"}`: `the answer must be a JSON object: give the schema "type": "object"`,
	} {
		srv := upstream(t)
		stdout, stderr, code := runSchema(t, srv, schema)
		assert.Equal(t, 1, code, schema)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, want)
		assert.Empty(t, srv.Requests(), "nothing asked with a bad schema")
	}
	var errOut bytes.Buffer
	err := run(t.Context(), []string{"run", "-schema", filepath.Join(t.TempDir(), "none.json"), "hi"}, nil, io.Discard, &errOut)
	assert.Equal(t, 1, exitCode(err, &errOut))
	assert.Contains(t, errOut.String(), "-schema: open")
	err = run(t.Context(), []string{"run", "-schema", schemaFile(t, citySchema), "-answer-mode", "json", "hi"}, nil, io.Discard, &errOut)
	assert.Equal(t, 1, exitCode(err, &errOut))
	assert.Contains(t, errOut.String(), `bad -answer-mode "json"`)
}

// TestRunSchemaAnswerIsJSON: the line printed decodes, as jq would read it.
func TestRunSchemaAnswerIsJSON(t *testing.T) {
	srv := upstream(t, robbytest.Answer(`{"name": "São Paulo \"SP\"", "population": 12325232}`))
	stdout, _, code := runSchema(t, srv, citySchema)
	require.Equal(t, 0, code)
	var v struct {
		Name       string `json:"name"`
		Population int    `json:"population"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &v))
	assert.Equal(t, `São Paulo "SP"`, v.Name)
}

// TestMCPSchema: robby mcp -schema makes ask a typed tool: it declares the
// schema as its output schema and answers with structured content, asked
// for, validated and repaired as -answer-mode and -max-repairs say.
func TestMCPSchema(t *testing.T) {
	call := func(t *testing.T, url string) *mcp.CallToolResult {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
			Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
		require.NoError(t, err)
		defer cs.Close()
		tools, err := cs.ListTools(t.Context(), nil)
		require.NoError(t, err)
		declared, err := json.Marshal(tools.Tools[0].OutputSchema)
		require.NoError(t, err)
		assert.JSONEq(t, citySchema, string(declared), "the file's schema, declared")
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"prompt": "Describe Paris"}})
		require.NoError(t, err)
		return res
	}
	bad := robbytest.Answer(`{"name": "Paris", "population": -1}`)

	srv := upstream(t, bad, robbytest.Answer(`{"name": "Paris", "population": 2102650}`))
	res := call(t, mcpHTTPInProcess(t, "-base-url", srv.URL, "-model", "m", "-schema", schemaFile(t, citySchema)))
	require.False(t, res.IsError, "%+v", res.Content)
	assert.Equal(t, map[string]any{"name": "Paris", "population": 2102650.0}, res.StructuredContent)
	assert.JSONEq(t, `{"name": "Paris", "population": 2102650}`, res.Content[0].(*mcp.TextContent).Text)
	reqs := srv.Requests()
	require.Len(t, reqs, 2, "one repair")
	assert.True(t, robbytest.AsksJSONSchema(reqs[0]), "auto: native first")

	srv = upstream(t, bad, bad)
	res = call(t, mcpHTTPInProcess(t, "-base-url", srv.URL, "-model", "m", "-schema", schemaFile(t, citySchema),
		"-answer-mode", "tool", "-max-repairs", "0"))
	require.True(t, res.IsError)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "after 1 answers (tool mode): /population: must be at least 0, got -1")
	reqs = srv.Requests()
	require.Len(t, reqs, 1, "-max-repairs 0: no repair")
	assert.Contains(t, reqs[0].Tools, "final_answer")
	assert.False(t, robbytest.AsksJSONSchema(reqs[0]))
}

// TestSchemaFileRefused: a schema file that is not a JSON Schema of an
// object stops robby run and robby mcp before anything is asked or
// served, naming the file.
func TestSchemaFileRefused(t *testing.T) {
	for schema, want := range map[string]string{
		`{"type": "object"`:                   "not a JSON Schema object",
		`{"type": "string"}`:                  `the answer must be a JSON object: give the schema "type": "object"`,
		`{"type": "object", "properties": 3}`: "not a JSON Schema",
		`{"type": "object", "properties": {"a": {"$ref": "#/$defs/none"}}}`: "$defs/none",
	} {
		file := schemaFile(t, schema)
		for _, cmd := range [][]string{{"run", "-schema", file, "hi"}, {"mcp", "-schema", file}, {"mcp", "-http", "-addr", "127.0.0.1:0", "-schema", file}} {
			srv := upstream(t)
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), append(cmd, "-base-url", srv.URL), strings.NewReader(""), &stdout, &stderr)
			assert.Equal(t, 1, exitCode(err, &stderr), "%s", cmd)
			assert.Empty(t, stdout.String())
			assert.Contains(t, stderr.String(), "-schema "+file+": ", cmd)
			assert.Contains(t, stderr.String(), want, cmd)
			assert.NotContains(t, stderr.String(), "serving", cmd)
			assert.NotRegexp(t, `With[A-Z]|Options\.`, stderr.String(), "a Go name")
			assert.Empty(t, srv.Requests())
		}
	}
}
