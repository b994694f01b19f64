package eval_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/eval"
	"github.com/robby-go/robby/robbytest"
)

// The issue's line, word for word.
const issueLine = `{"name": "capital", "input": "What is the capital of Norway?", "expected": "Oslo", "checks": [{"contains": "Oslo"}, {"max_turns": 3}, {"tool_called": "lookup"}, {"judge": "rubric text"}]}`

func writeFile(t *testing.T, name, text string) string {
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

// TestLoadJSONL loads the issue's line and runs it: every check named in
// the file scores the run.
func TestLoadJSONL(t *testing.T) {
	judge := robbytest.NewServer()
	t.Cleanup(judge.Close)
	judge.Fallback(robbytest.Answer(`{"pass": true, "score": 1, "reason": "fine"}`))
	path := writeFile(t, "capitals.jsonl", "# the issue's case\n\n"+issueLine+"\n"+
		`{"input": [{"role": "user", "content": "Capital of Norway?"}], "checks": [{"regex": "^Os"}, {"tool_not_called": "search"}, {"max_seconds": 30}, {"max_tokens": 1000}, {"max_cost": 1}, {"equals": "Oslo"}]}`+"\n")
	d, err := eval.Load(path, newAgent(t, judge))
	require.NoError(t, err)
	assert.Equal(t, "capitals", d.Name)
	require.Len(t, d.Cases, 2)
	assert.Equal(t, "line 4", d.Cases[1].Name, "an unnamed case is named for its line")
	var names []string
	for _, ev := range d.Cases[0].Evaluators {
		names = append(names, ev.Name())
	}
	assert.Equal(t, []string{"contains", "max_turns", "tool_called", "judge"}, names)

	model := robbytest.NewServer()
	t.Cleanup(model.Close)
	model.Reply(robbytest.ToolCalls(robbytest.Call("lookup", `{"country":"Norway"}`)), robbytest.Text("Oslo"), robbytest.Text("Oslo"))
	rep, err := eval.Run(t.Context(), d, newAgent(t, model, robby.WithTools(lookup)), eval.WithConcurrency(1))
	require.NoError(t, err)
	assert.True(t, rep.OK, "%+v", rep.Cases)
}

// TestLoadYAML loads the same kind of dataset from YAML, with checks for
// every case.
func TestLoadYAML(t *testing.T) {
	d, err := eval.Load("testdata/cases.yaml", nil)
	require.NoError(t, err)
	assert.Equal(t, "capitals", d.Name)
	require.Len(t, d.Cases, 2)
	assert.Len(t, d.Evaluators, 1)
	assert.Equal(t, map[string]any{"region": "europe"}, d.Cases[0].Metadata)
	assert.Equal(t, "case 2", d.Cases[1].Name)
	assert.Len(t, d.Cases[1].Messages, 3)
	assert.Empty(t, d.Cases[1].Input)
}

// TestLoadErrors name the line and the mistake.
func TestLoadErrors(t *testing.T) {
	for text, want := range map[string]string{
		`{"name": "a", "input": "x", "checks": [{"contian": "Oslo"}]}`:             "bad.jsonl:1: check 1 (contian): unknown check: give one of agent, contains, equals,",
		`{"name": "a", "input": "x", "cheks": []}`:                                 `bad.jsonl:1: json: unknown field "cheks"`,
		`{"name": "a", "input": "x", "checks": [{"judge": "good"}]}`:               "check 1 (judge): no judge agent was given",
		`{"name": "a", "input": "x", "checks": [{"regex": "("}]}`:                  "check 1 (regex): error parsing regexp",
		`{"name": "a", "input": "x", "checks": [{"max_turns": "3"}]}`:              "check 1 (max_turns): json: cannot unmarshal",
		`{"name": "a", "input": "x", "checks": [{"contains": "a", "regex": "b"}]}`: "check 1: want an object of one key",
		`{"name": "a", "input": [{"role": "robot", "content": "x"}]}`:              `message role "robot"`,
		`{"name": "a", "input": 3}`:                                                `"input" is neither text nor a list`,
		`{"name": "a", "input": "x", "checks": [{"valid_json": {"type": 3}}]}`:     "check 1 (valid_json)",
		"\n\nnot json": "bad.jsonl:3: invalid character",
	} {
		_, err := eval.Load(writeFile(t, "bad.jsonl", text), nil)
		require.Error(t, err, text)
		assert.Contains(t, err.Error(), want, text)
	}
	_, err := eval.Load(writeFile(t, "cases.txt", issueLine), nil)
	assert.ErrorContains(t, err, `give a .jsonl or .yaml file, not ".txt"`)
	_, err = eval.Load(writeFile(t, "bad.yaml", "cases:\n  - name: a\n    input: x\n    checks: [{nope: 1}]\n"), nil)
	assert.ErrorContains(t, err, "bad.yaml: case 1: check 1 (nope): unknown check")
	_, err = eval.Load(writeFile(t, "bad.yaml", "cases: [\n"), nil)
	assert.ErrorContains(t, err, "bad.yaml: yaml:")
	assert.True(t, strings.HasPrefix(err.Error(), "eval: "))
}
