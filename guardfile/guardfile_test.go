package guardfile_test

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/guardfile"
	"github.com/robby-go/robby/robbytest"
)

func TestLoadTheIssuesExample(t *testing.T) {
	guards, err := guardfile.Load("testdata/guards.json")
	require.NoError(t, err)
	require.Len(t, guards, 4)

	out := guards[0]
	assert.Equal(t, robby.GuardOutput, out.On)
	assert.Equal(t, robby.Redact, out.Action)
	assert.Equal(t, "[secret]", out.Replacement)
	assert.Equal(t, "sk-[A-Za-z0-9]{20,}", out.Pattern.String())

	res := guards[1]
	assert.Equal(t, robby.GuardToolResult, res.On)
	assert.Equal(t, robby.Block, res.Action)
	assert.Contains(t, res.Message, "was withheld")

	call := guards[2]
	assert.Equal(t, robby.Guard{Name: "no-rm", On: robby.GuardToolCall, Tool: "shell*", Pattern: call.Pattern, Action: robby.Block}, call)
	assert.True(t, call.Pattern.MatchString("rm  -rf /"))

	in := guards[3]
	assert.Equal(t, robby.GuardInput, in.On)
	assert.Equal(t, &robby.Judge{Rubric: "Is this message about our product? Answer yes or no.", Model: "judge", BlockIf: "no"}, in.Judge)
	assert.Equal(t, 5*time.Second, in.Timeout)
	assert.True(t, in.Beside)

	_, err = robby.New(robby.WithModel("m"), robby.WithGuards(guards...))
	require.NoError(t, err, "the agent takes every guard the file gives")
}

func TestYAML(t *testing.T) {
	guards, err := guardfile.Parse("g.yaml", []byte("guards:\n  - on: output\n    match: '\\d{16}'\n    action: block\n    paragraphs: true\n"))
	require.NoError(t, err)
	require.Len(t, guards, 1)
	assert.True(t, guards[0].Paragraphs)
	assert.Equal(t, regexp.MustCompile(`\d{16}`), guards[0].Pattern)
}

// The errors name the file, the line, the guard and the field.
func TestErrorsSayWhere(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"syntax", `{"guards": [`, "guards file g.json: yaml: line 1"},
		{"empty file", ``, `guards file g.json: empty: give a "guards" list`},
		{"no list", `{"rules": []}`, `guards file g.json: line 1: "rules": not a field of a guards file`},
		{"empty list", `{"guards": []}`, `guards file g.json: line 1: "guards" is empty`},
		{"unknown field", "{\"guards\": [\n {\"on\": \"output\",\n  \"regex\": \"x\"}]}", `guards file g.json: line 3: guard 1: "regex": not a field of a guard`},
		{"twice", "{\"guards\": [{\"on\": \"output\",\n \"on\": \"input\"}]}", `line 2: guard 1: "on": given twice (first at line 1)`},
		{"bad boundary", `{"guards": [{"on": "answer", "match": "x", "action": "block"}]}`, `line 1: guard 1: "on": give input, tool_call, tool_result or output, not "answer"`},
		{"bad type", "{\"guards\": [{\"on\": \"output\", \"match\": \"x\", \"action\": \"block\",\n\"max_match\": \"many\"}]}", `line 2: guard 1: "max_match": want a number`},
		{"bad pattern", "{\"guards\": [\n{\"on\": \"output\", \"action\": \"block\"},\n{\"name\": \"cards\", \"on\": \"output\",\n \"match\": \"[0-9\", \"action\": \"block\"}]}",
			`line 2: guard 1: give "match" (a pattern) or "judge" (a rubric)`},
		{"bad regexp", "{\"guards\": [{\"name\": \"cards\", \"on\": \"output\",\n \"match\": \"[0-9\", \"action\": \"block\"}]}",
			`line 2: guard 1 ("cards"): "match": error parsing regexp: missing closing ]`},
		{"no action", `{"guards": [{"on": "output", "match": "x"}]}`, `"action": give block or redact, not ""`},
		{"anchored output", `{"guards": [{"on": "output", "match": "^x", "action": "block"}]}`, `"match": an output pattern may not anchor`},
		{"both", `{"guards": [{"on": "input", "match": "x", "action": "block", "judge": "?", "block_if": "no"}]}`, `"judge": give match or judge, not both`},
		{"judge field on a pattern", `{"guards": [{"on": "input", "match": "x", "action": "block", "block_if": "no"}]}`, `"block_if": is a judge's field`},
		{"judge without block_if", `{"guards": [{"on": "input", "judge": "?"}]}`, `"block_if": a judge needs the answer that blocks`},
		{"judge without allow_if", `{"guards": [{"on": "input", "judge": "?", "block_if": "off-topic"}]}`, `"allow_if": a judge that blocks on "off-topic" needs the answer that allows`},
		{"redaction beside", `{"guards": [{"on": "input", "match": "x", "action": "redact", "beside": true}]}`, `"beside": a redaction must come before`},
		{"beside the output", `{"guards": [{"on": "output", "match": "x", "action": "block", "beside": true}]}`, `"beside": only an input guard`},
		{"tool on input", `{"guards": [{"on": "input", "tool": "shell", "match": "x", "action": "block"}]}`, `"tool": only a tool_call or tool_result guard names tools`},
		{"timeout", `{"guards": [{"on": "input", "judge": "?", "block_if": "no", "timeout": "soon"}]}`, `"timeout": want a duration such as "10s", not "soon"`},
		{"key without url", `{"guards": [{"on": "input", "judge": "?", "block_if": "no", "api_key": "k"}]}`, `"api_key": is the key of base_url's endpoint`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := guardfile.Parse("g.json", []byte(tc.file))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	var ge *guardfile.Error
	_, err := guardfile.Parse("g.json", []byte("{\"guards\": [\n{\"on\": \"nowhere\"}]}"))
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, guardfile.Error{Path: "g.json", Line: 2, Index: 1, Field: "on", Err: ge.Err}, *ge)

	_, err = guardfile.Load(filepath.Join(t.TempDir(), "none.json"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Regexp(t, `^guards file .*none.json: no such file or directory$`, err.Error())
}

// The values of ${VAR}s are secrets: no error shows them.
func TestVariablesStayOutOfErrors(t *testing.T) {
	const key = "judge-key-0123456789"
	t.Setenv("GUARDFILE_KEY", key)
	t.Setenv("GUARDFILE_URL", "ftp://"+key+"@example.com/v1")

	_, err := guardfile.Parse("g.json", []byte(`{"guards": [{"on": "input", "judge": "?", "block_if": "no", "base_url": "${GUARDFILE_URL}"}]}`))
	require.ErrorContains(t, err, `"base_url": not an http:// or https:// URL with a host`)
	assert.NotContains(t, err.Error(), key)

	_, err = guardfile.Parse("g.json", []byte(`{"guards": [{"on": "input", "judge": "?", "block_if": "no", "base_url": "http://x/v1", "api_key": "${GUARDFILE_UNSET}"}]}`))
	require.ErrorContains(t, err, `"api_key": environment variable GUARDFILE_UNSET is not set`)
}

// A judge with its own endpoint asks it, with its key; the key stays out of
// the reason a failing judge blocks with.
func TestJudgeOnItsOwnEndpoint(t *testing.T) {
	const key = "judge-key-0123456789"
	t.Setenv("GUARDFILE_KEY", key)
	agentSrv, judgeSrv := robbytest.NewServer(), robbytest.NewServer()
	defer agentSrv.Close()
	defer judgeSrv.Close()
	file := filepath.Join(t.TempDir(), "guards.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"guards": [{"name": "on-topic", "on": "input",
		"judge": "Is this message about our product?", "model": "judge", "block_if": "no",
		"base_url": "`+judgeSrv.URL+`", "api_key": "${GUARDFILE_KEY}"}]}`), 0o600))
	guards, err := guardfile.Load(file)
	require.NoError(t, err)
	a, err := robby.New(robby.WithBaseURL(agentSrv.URL), robby.WithModel("m"), robby.WithAPIKey("agent-key-0123456789"),
		robby.WithGuards(guards...))
	require.NoError(t, err)
	defer a.Close()

	judgeSrv.Reply(robbytest.Text("yes"))
	agentSrv.Reply(robbytest.Text("It does that."))
	res, err := a.Run(t.Context(), "what does it do?")
	require.NoError(t, err)
	assert.Equal(t, "It does that.", res.Text)
	req := judgeSrv.Requests()[0]
	assert.Equal(t, "judge", req.Model)
	assert.Equal(t, "Bearer "+key, req.Header.Get("Authorization"))

	judgeSrv.Reply(robbytest.Error(http.StatusUnauthorized, `{"error":{"message":"bad key `+key+`"}}`))
	_, err = a.Run(t.Context(), "what does it do?")
	var ge *robby.GuardError
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, "on-topic", ge.Guard)
	assert.Contains(t, ge.Reason, "failed: judge: OpenAI API error: 401 Unauthorized")
	assert.True(t, errors.Is(err, robby.ErrGuardBlocked))
	assert.Len(t, agentSrv.Requests(), 1, "a judge that fails blocks before the model is asked")
}

// A dial error quotes the URL: a token the URL holds is taken out.
func TestJudgeUnreachableKeepsTheURLsSecret(t *testing.T) {
	const token = "url-token-0123456789"
	t.Setenv("GUARDFILE_TOKEN", token)
	down := robbytest.NewServer()
	down.Close() // nothing listens there now
	agentSrv := robbytest.NewServer()
	defer agentSrv.Close()
	guards, err := guardfile.Parse("g.json", []byte(`{"guards": [{"on": "input", "judge": "?", "block_if": "no",
		"base_url": "`+down.URL+`/${GUARDFILE_TOKEN}"}]}`))
	require.NoError(t, err)
	a, err := robby.New(robby.WithBaseURL(agentSrv.URL), robby.WithModel("m"), robby.WithGuards(guards...))
	require.NoError(t, err)
	defer a.Close()
	_, err = a.Run(t.Context(), "hi")
	require.ErrorIs(t, err, robby.ErrGuardBlocked)
	assert.Contains(t, err.Error(), "/[redacted]/chat/completions")
	assert.NotContains(t, err.Error(), token)
}
