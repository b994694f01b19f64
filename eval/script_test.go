package eval_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/eval"
	"github.com/robby-go/robby/robbytest/agenttest"
)

// TestScripted plays the example dataset from its scripts: the runs of a
// case follow its scripts in turn, the scripted tools give their results,
// and the scripted judge passes the answers holding the expected one.
func TestScripted(t *testing.T) {
	_, err := eval.Load("../examples/eval/cases.jsonl", nil)
	require.Error(t, err, "the dataset has judge checks")
	placeholder := newAgent(t, agenttest.NewServer(t)) // never asked
	d, err := eval.Load("../examples/eval/cases.jsonl", placeholder)
	require.NoError(t, err)
	s, err := eval.NewScripted(d)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	require.Len(t, s.Tools(), 1)
	assert.Equal(t, "lookup", s.Tools()[0].Name())

	judge := newAgent(t, s.Judge)
	d, err = eval.Load("../examples/eval/cases.jsonl", judge)
	require.NoError(t, err)
	agent := newAgent(t, s.Model, robby.WithTools(s.Tools()...))
	rep, err := eval.Run(t.Context(), d, agent, eval.WithRepeat(5))
	require.NoError(t, err)
	passed := map[string]int{}
	for _, c := range rep.Cases {
		passed[c.Name] = c.Passed
	}
	assert.Equal(t, map[string]int{"capital": 5, "capital-sweden": 3, "arithmetic": 4, "json-answer": 5, "follow-up": 4}, passed)
	assert.Equal(t, []string{"contains: the answer \"Aarhus.\" does not contain \"Copenhagen\"",
		"judge: the answer does not give Copenhagen"}, rep.Cases[4].Failures[0].Reasons)
}

// TestScriptedNone: a dataset without scripts has no scripted model.
func TestScriptedNone(t *testing.T) {
	s, err := eval.NewScripted(capitals(2))
	require.NoError(t, err)
	assert.Nil(t, s)
}
