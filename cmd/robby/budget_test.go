package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

// pricesFile writes a -prices file holding prices.
func pricesFile(t *testing.T, prices string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prices.json")
	require.NoError(t, os.WriteFile(path, []byte(prices), 0o600))
	return path
}

// modelPrices prices the model m at 1 a million prompt tokens, 0.5 cached,
// and 2 a million completion tokens.
const modelPrices = `{"m": {"input": 1, "cached_input": 0.5, "output": 2}, "free": {}}`

// lookFirst is a turn that says something, then calls a tool: the run goes
// on to another turn.
func lookFirst() robbytest.Reply {
	return robbytest.ToolCalls(robbytest.Call("lookup", `{}`)).WithText("Let me look.").WithUsage(1000, 100)
}

// TestRunStopsAtItsBudget: each budget flag stops robby run before the
// request past its limit, says which limit on stderr, keeps on stdout what
// the model wrote, and exits 1.
func TestRunStopsAtItsBudget(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"calls", []string{"-budget-calls", "1"}, "robby: budget reached: 1 used of 1 model calls"},
		{"tokens", []string{"-budget-tokens", "1000"}, "robby: budget reached: 1100 used of 1000 tokens"},
		{"cost", []string{"-budget-cost", "0.001", "-prices", pricesFile(t, modelPrices)}, "robby: budget reached: 0.0012 used of 0.001 cost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := upstream(t, lookFirst(), robbytest.Text("never asked"))
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), append(append([]string{"run", "-base-url", srv.URL, "-model", "m"}, tt.args...), "look it up"),
				nil, &stdout, &stderr)
			assert.ErrorIs(t, err, robby.ErrBudget)
			assert.Equal(t, 1, exitCode(err, &stderr))
			assert.Equal(t, "Let me look.\n", stdout.String(), "the answer so far stays on stdout")
			assert.Contains(t, stderr.String(), tt.want)
			assert.Len(t, srv.Requests(), 1, "nothing sent past the limit")
		})
	}
}

// TestBudgetIsPerAnswer: in chat, each answer has the whole budget.
func TestBudgetIsPerAnswer(t *testing.T) {
	srv := upstream(t, robbytest.Text("one").WithUsage(60, 10), robbytest.Text("two").WithUsage(60, 10))
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"chat", "-base-url", srv.URL, "-model", "m", "-budget-calls", "1", "-budget-tokens", "100"},
		strings.NewReader("first\nsecond\n"), &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	assert.Equal(t, "one\ntwo\n", stdout.String())
}

// TestRunShowsWhatItSpent: with -prices, robby run says on stderr what the
// answer's requests used and cost; with -v, what they used; stdout holds
// only the answer.
func TestRunShowsWhatItSpent(t *testing.T) {
	prices := pricesFile(t, modelPrices)
	tests := []struct {
		name string
		args []string
		want string // "" for no line
	}{
		{"prices", []string{"-prices", prices}, "robby: 2 model requests, 3150 tokens (3000 in, 1000 cached, 150 out), cost 0.0028\n"},
		{"verbose", []string{"-v"}, "robby: 2 model requests, 3150 tokens (3000 in, 1000 cached, 150 out)\n"},
		{"neither", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := upstream(t, lookFirst(), robbytest.Text("Found it.").WithUsage(2000, 50).WithUsageDetails(1000, 0))
			var stdout bytes.Buffer
			stderr := &syncBuffer{} // -v logs from the tools' goroutines too
			err := run(t.Context(), append(append([]string{"run", "-base-url", srv.URL, "-model", "m"}, tt.args...), "look it up"),
				nil, &stdout, stderr)
			require.NoError(t, err, stderr.String())
			assert.Equal(t, "Let me look.Found it.\n", stdout.String())
			if tt.want == "" {
				assert.NotContains(t, stderr.String(), "model request")
				return
			}
			assert.True(t, strings.HasSuffix(stderr.String(), tt.want), "stderr:\n%s", stderr.String())
		})
	}

	// A typed run too, its JSON alone on stdout.
	srv := upstream(t, robbytest.Answer(`{"name": "Paris", "population": 1}`).WithUsage(100, 20))
	stdout, stderr, code := runSchema(t, srv, citySchema, "-model", "m", "-prices", prices)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, `{"name":"Paris","population":1}`+"\n", stdout)
	assert.Contains(t, stderr, "robby: 1 model request, 120 tokens (100 in, 20 out), cost 0.00014\n")
}

// TestBudgetFlagsRefused: a budget or prices the flags cannot give is
// refused before anything is sent, in the flags' words.
func TestBudgetFlagsRefused(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-budget-calls", "-1"}, "-budget-calls is -1: give a number of model requests, or 0 for no limit"},
		{[]string{"-budget-cost", "-0.5"}, "-budget-cost is -0.5: give an amount in the prices' currency, or 0 for no limit"},
		{[]string{"-budget-cost", "NaN"}, "-budget-cost is NaN"},
		{[]string{"-budget-cost", "0.5"}, "-budget-cost needs the models' prices: give -prices FILE"},
		{[]string{"-prices", filepath.Join(t.TempDir(), "none.json")}, "-prices: open"},
		{[]string{"-prices", pricesFile(t, `{"other": {"input": 1, "output": 2}}`)}, `no price for the model "m": add it ("m": {} if it is free)`},
		{[]string{"-prices", pricesFile(t, `{"m": {"inputs": 1, "output": 2}}`)}, `unknown field "inputs"`},
		{[]string{"-prices", pricesFile(t, `{"m": {"input": 1}}`)}, `model "m": give both "input" and "output" (per million tokens), or {} if it is free`},
		{[]string{"-prices", pricesFile(t, `{"m": {"cached_input": 1}}`)}, `model "m": give both "input" and "output"`},
		{[]string{"-prices", pricesFile(t, `{"m": {"input": -1, "output": 2}}`)}, `model "m": a negative price`},
		{[]string{"-prices", pricesFile(t, `{"m": {"input": "$1", "output": 2}}`)}, `give a JSON object such as {"gpt-4o": {"input": 2.5`},
		{[]string{"-prices", pricesFile(t, `{"m": {}} {}`)}, "more after the object"},
		{[]string{"-prices", pricesFile(t, `[]`)}, "give a JSON object"},
		{[]string{"-prices", pricesFile(t, `{"": {}, "m": {}}`)}, "a price for an empty model name"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			srv := upstream(t)
			var stderr bytes.Buffer
			err := run(t.Context(), append(append([]string{"run", "-base-url", srv.URL, "-model", "m"}, tt.args...), "hi"), nil, io.Discard, io.Discard)
			require.Error(t, err)
			assert.Equal(t, 1, exitCode(err, &stderr))
			assert.Contains(t, stderr.String(), tt.want)
			assert.NotRegexp(t, `With[A-Z]`, stderr.String(), "a Go option's name")
			assert.Empty(t, srv.Requests())
		})
	}
}

// TestMCPBudget: robby mcp's budget flags bound each call of ask; a call
// stopped by one is a tool error that says so, with the answer so far.
func TestMCPBudget(t *testing.T) {
	srv := upstream(t, lookFirst(), robbytest.Text("never asked"))
	url := mcpHTTPInProcess(t, "-base-url", srv.URL, "-model", "m", "-budget-cost", "0.001", "-prices", pricesFile(t, modelPrices))
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	require.NoError(t, err)
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"prompt": "look it up"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	msg := res.Content[0].(*mcp.TextContent).Text
	assert.Contains(t, msg, "budget reached: 0.0012 used of 0.001 cost")
	assert.Contains(t, msg, "Let me look.")
	assert.Len(t, srv.Requests(), 1)
}

// TestTraceShowsCost: with -prices, the -trace tree shows each model
// call's cost, and the run's.
func TestTraceShowsCost(t *testing.T) {
	srv := upstream(t, lookFirst(), robbytest.Text("Found it.").WithUsage(2000, 50))
	var stderr bytes.Buffer
	err := run(t.Context(), []string{"run", "-trace", "-base-url", srv.URL, "-model", "m", "-prices", pricesFile(t, modelPrices), "look it up"},
		nil, io.Discard, &stderr)
	require.NoError(t, err, stderr.String())
	assert.Regexp(t, `invoke_agent .*cost=0\.0033`, stderr.String())
	assert.Regexp(t, `chat m .*cost=0\.0012`, stderr.String())
	assert.Regexp(t, `chat m .*cost=0\.0021`, stderr.String())
}
