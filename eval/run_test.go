package eval_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/eval"
	"github.com/robby-go/robby/robbytest"
)

// capitals is a dataset of n cases, each checked for "Oslo".
func capitals(n int) eval.Dataset {
	d := eval.Dataset{Name: "capitals", Evaluators: []eval.Evaluator{eval.Contains("Oslo")}}
	for i := range n {
		d.Cases = append(d.Cases, eval.Case{Name: fmt.Sprintf("case-%d", i), Input: fmt.Sprintf("Question %d: the capital of Norway?", i)})
	}
	return d
}

// TestKnownPassRate runs a model right in 3 of 5 calls per case: the pass
// rate is 0.6 exactly, pass^3 is C(3,3)/C(5,3) = 0.1, and the true pass^3
// of a model right with chance 0.6 a call, 0.6³ = 0.216, lies within the
// interval the report gives for it.
func TestKnownPassRate(t *testing.T) {
	srv := flaky(t, 3, 5)
	rep, err := eval.Run(t.Context(), capitals(4), newAgent(t, srv), eval.WithRepeat(5), eval.WithPassK(3), eval.WithConcurrency(3))
	require.NoError(t, err)

	assert.Equal(t, 20, rep.Runs)
	assert.Equal(t, 12, rep.Passed)
	assert.InDelta(t, 0.6, rep.PassRate, 1e-12)
	assert.InDelta(t, 0.1, rep.PassHatK, 1e-12)
	assert.Less(t, rep.PassRateLow, 0.6)
	assert.Greater(t, rep.PassRateHigh, 0.6)
	assert.False(t, rep.OK)
	assert.Equal(t, 4, rep.FailedCases)
	for _, c := range rep.Cases {
		assert.Equal(t, 5, c.Runs, c.Name)
		assert.Equal(t, 3, c.Passed, c.Name)
		assert.InDelta(t, 0.6, c.PassRate, 1e-12)
		assert.InDelta(t, 0.1, c.PassHatK, 1e-12)
		assert.InDelta(t, 0.2307, c.PassRateLow, 1e-4, "Wilson 95 %% of 3/5")
		assert.InDelta(t, 0.8824, c.PassRateHigh, 1e-4, "Wilson 95 %% of 3/5")
		assert.Less(t, c.PassHatKLow, 0.216)
		assert.Greater(t, c.PassHatKHigh, 0.216)
		assert.InDelta(t, 0.6, c.Scores["contains"], 1e-12)
		require.Len(t, c.Failures, 2)
		assert.Equal(t, []string{`contains: the answer "The capital is Bergen." does not contain "Oslo"`}, c.Failures[0].Reasons)
		assert.Len(t, c.Failures[0].Messages, 2, "the prompt and the answer")
	}
	assert.Equal(t, int64(20*25), rep.Usage.TotalTokens)
	assert.Positive(t, rep.LatencyP95)
	assert.LessOrEqual(t, rep.LatencyP50, rep.LatencyP95)
}

// TestThreshold: a case passes when its pass rate reaches the threshold.
func TestThreshold(t *testing.T) {
	srv := flaky(t, 4, 5)
	rep, err := eval.Run(t.Context(), capitals(2), newAgent(t, srv), eval.WithRepeat(5), eval.WithThreshold(0.8))
	require.NoError(t, err)
	assert.True(t, rep.OK)
	assert.Equal(t, 0, rep.FailedCases)
	assert.InDelta(t, 0.0, rep.PassHatK, 1e-12, "pass^5 with a failure among 5 runs")
}

// TestToolsTurnsAndErrors checks the evaluators of what a run did, on a
// model that looks the capital up, then answers.
func TestToolsTurnsAndErrors(t *testing.T) {
	srv := robbytest.NewServer()
	t.Cleanup(srv.Close)
	srv.Reply(
		robbytest.ToolCalls(robbytest.Call("lookup", `{"country":"Norway"}`)).WithUsage(30, 10),
		robbytest.Text("Oslo").WithUsage(40, 2),
	)
	d := eval.Dataset{Name: "tools", Cases: []eval.Case{{
		Name: "lookup", Input: "Capital of Norway?", Expected: "Oslo",
		Evaluators: []eval.Evaluator{
			eval.ContainsExpected(), eval.EqualsExpected(),
			eval.ToolCalledWith("lookup", map[string]any{"country": "Norway"}),
			eval.ToolCalledWith("lookup", map[string]any{"country": "Sweden"}),
			eval.ToolNotCalled("search"), eval.ToolNotCalled("lookup"), eval.ToolCalled("search"),
			eval.MaxTurns(2), eval.MaxTurns(1), eval.MaxTokens(82), eval.MaxTokens(81),
		},
	}}}
	rep, err := eval.Run(t.Context(), d, newAgent(t, srv, robby.WithTools(lookup)))
	require.NoError(t, err)
	c := rep.Cases[0]
	assert.Equal(t, 0, c.Passed)
	require.Len(t, c.Failures, 1)
	assert.Equal(t, []string{
		`tool_called: lookup was called with {"country":"Norway"}, not with arguments holding {"country":"Sweden"}`,
		"tool_not_called: lookup was called 1 times",
		"tool_called: search was not called (calls: lookup)",
		"max_turns: 2 turns, more than 1",
		"max_tokens: 82 tokens, more than 81",
	}, c.Failures[0].Reasons)
	assert.Len(t, c.Failures[0].Messages, 4, "prompt, call, result, answer")
}

// TestRunErrorFails: a run that ends in an error fails, and says why.
func TestRunErrorFails(t *testing.T) {
	srv := robbytest.NewServer()
	t.Cleanup(srv.Close)
	srv.Reply(robbytest.Error(400, `{"error":{"message":"no such model"}}`))
	d := eval.Dataset{Name: "err", Cases: []eval.Case{{Name: "x", Input: "hi"}}}
	rep, err := eval.Run(t.Context(), d, newAgent(t, srv))
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Errors)
	require.Len(t, rep.Cases[0].Failures, 1)
	assert.Contains(t, rep.Cases[0].Failures[0].Reasons[0], "the run failed: ")
	assert.Contains(t, rep.Cases[0].Failures[0].Reasons[0], "no such model")
}

// TestConversationCase: a case's messages come before its input.
func TestConversationCase(t *testing.T) {
	srv := robbytest.NewServer()
	t.Cleanup(srv.Close)
	srv.Reply(robbytest.Text("Oslo"), robbytest.Text("Oslo"))
	d := eval.Dataset{Name: "conv", Cases: []eval.Case{
		{Name: "follow-up", Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage("Let's talk about Norway."), openai.AssistantMessage("Gladly."),
		}, Input: "Its capital?", Expected: "Oslo"},
		{Name: "resume", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Capital of Norway?")}, Expected: "Oslo"},
	}}
	rep, err := eval.Run(t.Context(), d, newAgent(t, srv), eval.WithConcurrency(1))
	require.NoError(t, err)
	assert.True(t, rep.OK, "%+v", rep.Cases)
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	var roles []string
	for _, m := range reqs[0].Messages {
		roles = append(roles, m.Role+":"+m.Content)
	}
	assert.Equal(t, []string{"user:Let's talk about Norway.", "assistant:Gladly.", "user:Its capital?"}, roles)
	assert.Len(t, reqs[1].Messages, 1)
}

type capital struct {
	Country string `json:"country"`
	City    string `json:"city"`
}

// TestTyped: a typed run's value is compared with the expected value.
func TestTyped(t *testing.T) {
	srv := robbytest.NewServer()
	t.Cleanup(srv.Close)
	srv.Fallback(robbytest.Answer(`{"country":"Norway","city":"Oslo"}`))
	d := eval.Dataset{Name: "typed", Cases: []eval.Case{
		{Name: "right", Input: "Norway?", ExpectedValue: capital{"Norway", "Oslo"}},
		{Name: "map", Input: "Norway?", ExpectedValue: map[string]any{"city": "Oslo", "country": "Norway"},
			Evaluators: []eval.Evaluator{eval.EqualsExpectedValue(), eval.ValidFor[capital]()}},
		{Name: "wrong", Input: "Norway?", ExpectedValue: capital{"Norway", "Bergen"}},
	}}
	rep, err := eval.Run(t.Context(), d, newAgent(t, srv), eval.Typed[capital]())
	require.NoError(t, err)
	assert.Equal(t, []int{1, 1, 0}, []int{rep.Cases[0].Passed, rep.Cases[1].Passed, rep.Cases[2].Passed})
	assert.Equal(t, []string{`equals_value: the value {"country":"Norway","city":"Oslo"} is not {"country":"Norway","city":"Bergen"}`},
		rep.Cases[2].Failures[0].Reasons)
}

// TestPanickingEvaluator fails its run, not the eval.
func TestPanickingEvaluator(t *testing.T) {
	srv := flaky(t, 1, 1)
	d := capitals(1)
	d.Evaluators = append(d.Evaluators, eval.Func("boom", func(context.Context, *eval.Output) (eval.Score, error) {
		panic("boom")
	}), eval.Func("broken", func(context.Context, *eval.Output) (eval.Score, error) {
		return eval.Score{}, errors.New("cannot judge")
	}))
	rep, err := eval.Run(t.Context(), d, newAgent(t, srv))
	require.NoError(t, err)
	require.Len(t, rep.Cases[0].Failures, 1)
	assert.Equal(t, []string{"boom: evaluator boom panicked: boom", "broken: cannot judge"}, rep.Cases[0].Failures[0].Reasons)
}

// TestBadDatasets are refused before any run.
func TestBadDatasets(t *testing.T) {
	srv := flaky(t, 1, 1)
	a := newAgent(t, srv)
	for name, d := range map[string]eval.Dataset{
		"empty":     {},
		"unnamed":   {Cases: []eval.Case{{Input: "x"}}},
		"duplicate": {Cases: []eval.Case{{Name: "a", Input: "x"}, {Name: "a", Input: "y"}}},
		"no input":  {Cases: []eval.Case{{Name: "a"}}},
	} {
		_, err := eval.Run(t.Context(), d, a)
		assert.ErrorIs(t, err, eval.ErrDataset, name)
	}
	_, err := eval.Run(t.Context(), capitals(1), a, eval.WithRepeat(2), eval.WithPassK(3))
	assert.ErrorContains(t, err, "pass^3 needs at least 3 runs")
	assert.Empty(t, srv.Requests())
}

// TestCanceled returns the report of the runs done, with ctx's error.
func TestCanceled(t *testing.T) {
	srv := flaky(t, 1, 1)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	rep, err := eval.Run(ctx, capitals(2), newAgent(t, srv))
	assert.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, rep)
	assert.Equal(t, 2, rep.Errors)
}
