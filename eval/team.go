package eval

import (
	"context"
	"fmt"
	"strings"
)

// AnsweredBy passes when the agent named answered the run: in a team
// ([robby.WithTeam]), the agent holding the conversation when the run ended
// ([robby.Result.Agent]).
func AnsweredBy(agent string) Evaluator {
	return Func("agent", func(_ context.Context, out *Output) (Score, error) {
		got := out.Result.Agent
		if got == "" {
			got = "an agent without a name"
		}
		return verdict(out.Result.Agent == agent, agent+" answered", fmt.Sprintf("%s answered, not %s", got, agent)), nil
	})
}

// HandedOffTo passes when the run handed the conversation over to the agent
// named, at any point ([robby.Result.Handoffs]).
func HandedOffTo(agent string) Evaluator {
	return Func("handoff", func(_ context.Context, out *Output) (Score, error) {
		var to []string
		for _, t := range out.Result.Handoffs {
			if t.To == agent {
				return pass(fmt.Sprintf("%s handed over to %s", t.From, agent)), nil
			}
			to = append(to, t.To)
		}
		if len(to) == 0 {
			return fail("no handoff"), nil
		}
		return fail(fmt.Sprintf("handed over to %s, not %s", strings.Join(to, ", "), agent)), nil
	})
}
