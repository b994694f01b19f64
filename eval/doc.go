// Package eval tells whether an agent is good. It runs a [Dataset] of [Case]s
// against a robby agent, several times each, and scores every run with
// [Evaluator]s. It reports pass rates with their uncertainty, pass^k, scores,
// tokens, cost and latency. It complements the robby package with what a team
// needs to change a prompt, a tool or a model safely. It is built only on
// robby's exported API.
//
//	ds := eval.Dataset{Name: "capitals", Cases: []eval.Case{{
//		Name:       "norway",
//		Input:      "What is the capital of Norway?",
//		Evaluators: []eval.Evaluator{eval.Contains("Oslo"), eval.MaxTurns(3)},
//	}}}
//	report, err := eval.Run(ctx, ds, agent, eval.WithRepeat(5))
//
// # Runs
//
// Each case runs [WithRepeat] times on its own clone of the agent
// ([robby.Agent.Clone]), at most [WithConcurrency] runs at once. A run passes
// when it ended without error and every evaluator passed it.
//
// # Statistics
//
// A case's pass rate is its passed runs over its runs, given with a 95 % Wilson
// score interval. Unlike the normal approximation, it stays within [0, 1] and
// is honest for the few runs an eval can afford.
//
// pass^k (after τ-bench) is the chance that k runs of a case in a row all pass:
// what a user who asks k times sees. With n runs of which c passed, it is
// estimated by C(c, k) / C(n, k). That is the chance that k runs drawn without
// replacement from the n all passed. For independent runs of pass chance p, its
// expectation is exactly p^k, so it is unbiased. Its interval is the pass
// rate's Wilson interval raised to the power k. Overall, pass^k is the mean of
// the cases' estimates.
//
// # Baselines
//
// A [Report] is saved as JSON and compared with a later one by [Compare]. A
// case regressed (or improved) when Fisher's exact test, two-sided, on the two
// runs' pass counts gives p < 0.05. Fewer than 4 runs per case in each report
// can never reach that: repeat runs to see changes.
//
// # In go test
//
// [Test] turns a dataset into subtests, skipped without a model endpoint unless
// ROBBY_EVAL_REQUIRE is set.
package eval
