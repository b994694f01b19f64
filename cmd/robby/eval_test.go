package main

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// exampleCases is the example dataset, played by its scripts offline.
const exampleCases = "../../examples/eval/cases.jsonl"

// evalRun runs robby eval with args, without an endpoint in the
// environment unless the args give one.
func runEval(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Setenv("OPENAI_BASE_URL", "")
	var out, errOut bytes.Buffer
	err = run(t.Context(), append([]string{"eval"}, args...), nil, &out, &errOut)
	return out.String(), errOut.String(), err
}

// TestEvalExample is the command: the example dataset, five runs
// a case, a table and a page that shows which cases fail and why; exit
// status 1 since some do.
func TestEvalExample(t *testing.T) {
	dir := t.TempDir()
	page, report := filepath.Join(dir, "report.html"), filepath.Join(dir, "report.json")
	stdout, stderr, err := runEval(t, exampleCases, "-repeat", "5", "-html", page, "-o", report)
	require.Error(t, err)
	assert.Equal(t, 1, exitCode(err, &bytes.Buffer{}), "cases failed")
	assert.Contains(t, stderr, "the cases' scripts answer, in process")
	assert.Regexp(t, `(?m)^CASE +RUNS +PASSED +PASS RATE +95% CI +PASS\^5`, stdout)
	assert.Regexp(t, `(?m)^capital-sweden +5 +3 +0\.60 +\[0\.23, 0\.88\] +0\.00 .* FAIL$`, stdout)
	assert.Regexp(t, `(?m)^overall +25 +21 +0\.84 `, stdout)
	assert.Regexp(t, `capital-sweden, run \d: (contains|tool_called): `, stdout, "the first failure of each failing case")
	assert.NotContains(t, stdout, "\r", "no progress bar off a terminal")

	html, err := os.ReadFile(page)
	require.NoError(t, err)
	assert.Contains(t, string(html), "3 of 5 cases failed")
	assert.Regexp(t, "<summary>run \\d failed: contains: the answer &#34;Gothenburg, I believe.&#34;", string(html))

	b, err := os.ReadFile(report)
	require.NoError(t, err)
	var rep map[string]any
	require.NoError(t, json.Unmarshal(b, &rep))
	for _, key := range []string{"name", "runs", "passed", "pass_rate", "pass_hat_k"} {
		assert.Contains(t, rep, key)
		assert.Contains(t, rep["cases"].([]any)[0], key)
	}
	assert.Equal(t, 25.0, rep["runs"])
}

// TestEvalBaseline: a baseline comparison flags a planted regression, not
// noise; -fail-on regressions fails on the first only.
func TestEvalBaseline(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	line := func(name, answers string) string {
		return `{"name": "` + name + `", "input": "` + name + `?", "checks": [{"contains": "yes"}], "metadata": {"script": ` + answers + `}}` + "\n"
	}
	all := `[["yes"]]`
	require.NoError(t, os.WriteFile(good, []byte(line("a", all)+line("b", all)), 0o600))
	baseline := filepath.Join(dir, "baseline.json")
	_, _, err := runEval(t, "-repeat", "6", "-o", baseline, good)
	require.NoError(t, err)

	// b now fails every time: a regression; a fails once in six: noise.
	worse := filepath.Join(dir, "worse.jsonl")
	require.NoError(t, os.WriteFile(worse, []byte(line("a", `[["yes"],["yes"],["no"],["yes"],["yes"],["yes"]]`)+line("b", `[["no"]]`)), 0o600))
	stdout, _, err := runEval(t, worse, "-repeat", "6", "-baseline", baseline, "-fail-on", "regressions")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1 cases regressed")
	assert.Contains(t, stdout, "against "+baseline+": 1 regressed, 0 improved, 1 within noise")
	assert.Contains(t, stdout, "regressed: b 6/6 -> 0/6 (p = 0.00216)")

	// Only noise: the failures alone fail the eval, not -fail-on regressions.
	noisy := filepath.Join(dir, "noisy.jsonl")
	require.NoError(t, os.WriteFile(noisy, []byte(line("a", `[["yes"],["no"],["yes"],["yes"],["yes"],["yes"]]`)+line("b", all)), 0o600))
	_, _, err = runEval(t, noisy, "-repeat", "6", "-baseline", baseline, "-fail-on", "regressions")
	assert.NoError(t, err)
	_, _, err = runEval(t, noisy, "-repeat", "6", "-baseline", baseline)
	assert.ErrorContains(t, err, "1 cases failed")
	_, _, err = runEval(t, noisy, "-repeat", "6", "-fail-on", "never")
	assert.NoError(t, err)
	_, _, err = runEval(t, noisy, "-repeat", "6", "-threshold", "0.8")
	assert.NoError(t, err, "5 of 6 is over 0.8")
}

// TestEvalRealEndpoint: with an endpoint, the model there answers, scripts
// or not, with the agent the run flags build (-schema here).
func TestEvalRealEndpoint(t *testing.T) {
	srv := upstream(t)
	srv.Fallback(robbytest.Answer(`{"country": "Norway", "capital": "Oslo"}`))
	dir := t.TempDir()
	cases := filepath.Join(dir, "cases.yaml")
	require.NoError(t, os.WriteFile(cases, []byte(`
cases:
  - name: typed
    input: Norway's capital, as JSON
    expected_value: {country: Norway, capital: Oslo}
    metadata: {script: [["never used"]]}
`), 0o600))
	schema := filepath.Join(dir, "schema.json")
	require.NoError(t, os.WriteFile(schema, []byte(`{"type": "object", "properties": {"country": {"type": "string"}, "capital": {"type": "string"}}, "required": ["country", "capital"]}`), 0o600))
	stdout, stderr, err := runEval(t, "-base-url", srv.URL, "-model", "m", "-schema", schema, "-repeat", "2", cases)
	require.NoError(t, err, stdout+stderr)
	assert.NotContains(t, stderr, "scripts answer")
	assert.Regexp(t, `(?m)^typed +2 +2 +1\.00`, stdout)
	assert.Len(t, srv.Requests(), 2)
}

// TestEvalUsage: a bad command line is refused with status 2.
func TestEvalUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"a.jsonl", "b.jsonl"},
		{"-repeat", "0", exampleCases},
		{"-k", "3", exampleCases},
		{"-fail-on", "regressions", exampleCases},
		{"-fail-on", "sometimes", exampleCases},
	} {
		_, _, err := runEval(t, args...)
		assert.Equal(t, 2, exitCode(err, &bytes.Buffer{}), "%q: %v", args, err)
	}
	_, _, err := runEval(t, filepath.Join(t.TempDir(), "missing.jsonl"))
	assert.Equal(t, 1, exitCode(err, &bytes.Buffer{}))
	stdout, _, err := runEval(t, "-h")
	require.NoError(t, err)
	for _, flag := range []string{"-repeat", "-concurrency", "-o file", "-baseline file", "-html file", "-fail-on", "-schema", "-mcp", "-kb", "-otel"} {
		assert.Contains(t, stdout, "  "+flag)
	}
}

// TestProgressBar draws the runs done, and clears its line at the end.
func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	bar := &progressBar{w: &b}
	bar.show(3, 10)
	assert.Equal(t, "\r[=========                     ] 3/10 runs", b.String())
	b.Reset()
	bar.show(10, 10)
	assert.True(t, strings.HasSuffix(b.String(), "\r\033[K"))
	assert.Nil(t, newProgressBar(&b), "not a terminal")
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	require.NoError(t, err)
	defer f.Close()
	assert.Nil(t, newProgressBar(f), "a file is not a terminal")
}

// TestEvalOTel exports the eval's spans with the agent's and the judge's:
// each case, run and evaluator under the eval's.
func TestEvalOTel(t *testing.T) {
	c := new(collector)
	hs := httptest.NewServer(c)
	defer hs.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", hs.URL)
	_, stderr, err := runEval(t, "-otel", "-repeat", "2", exampleCases)
	require.NoError(t, err, stderr)

	c.mu.Lock()
	defer c.mu.Unlock()
	count := map[string]int{}
	for _, s := range c.spans {
		count[s]++
	}
	assert.Equal(t, 1, count["eval cases"])
	assert.Equal(t, 1, count["eval_case capital"])
	assert.Equal(t, 2, count["eval_run capital"])
	assert.Equal(t, 4, count["evaluate judge"], "two cases judged, twice each")
	assert.Equal(t, 6, count["evaluate contains"], "three cases checked, twice each")
	assert.Equal(t, 4, count["evaluate max_turns"], "two cases, twice each")
	assert.Positive(t, count["invoke_agent"])
	assert.Positive(t, count["execute_tool lookup"])
	assert.True(t, strings.Contains(strings.Join(c.spans, ","), "chat "), "the model calls")
}
