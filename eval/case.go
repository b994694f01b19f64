package eval

import (
	"github.com/openai/openai-go/v3"
)

// A Dataset is a named list of cases, with the evaluators that score every
// one of them.
type Dataset struct {
	Name  string
	Cases []Case
	// Evaluators score every run of every case, before the case's own.
	Evaluators []Evaluator
}

// A Case is one task for the agent and how to judge what it did.
type Case struct {
	// Name identifies the case in reports and baselines: unique in its
	// dataset.
	Name string
	// Input is the prompt. With Messages, it follows them; it may then
	// be empty, for the agent to answer the conversation as it is.
	Input string
	// Messages are the conversation the run starts from, after the
	// agent's system prompt.
	Messages []openai.ChatCompletionMessageParamUnion
	// Expected is the expected answer, for [EqualsExpected],
	// [ContainsExpected] and the judge. A case with no evaluator at all
	// passes when its answer contains it.
	Expected string
	// ExpectedValue is the value a typed run ([Typed]) should give, for
	// [EqualsExpectedValue], compared as JSON. A case with no evaluator at
	// all passes when its value equals it.
	ExpectedValue any
	// Metadata is free for the user: tags, sources, difficulty. Reports
	// keep it.
	Metadata map[string]any
	// Evaluators score this case's runs, after the dataset's.
	Evaluators []Evaluator
}

// evaluators returns the evaluators of c's runs in d: the dataset's and the
// case's. When both are empty, it is the check of the expected answer.
func (d *Dataset) evaluators(c *Case) []Evaluator {
	evs := append(append([]Evaluator(nil), d.Evaluators...), c.Evaluators...)
	if len(evs) > 0 {
		return evs
	}
	switch {
	case c.ExpectedValue != nil:
		return []Evaluator{EqualsExpectedValue()}
	case c.Expected != "":
		return []Evaluator{ContainsExpected()}
	}
	return nil
}
