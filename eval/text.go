package eval

import (
	"context"
	"fmt"
	"regexp"
	"strings"
)

// quoteLimit bounds how much of an answer a reason quotes.
const quoteLimit = 200

// quote quotes s for a reason, cut to quoteLimit bytes.
func quote(s string) string {
	return fmt.Sprintf("%q", cut(s, quoteLimit))
}

// Equals passes an answer equal to want, surrounding space aside.
func Equals(want string) Evaluator {
	return Func("equals", func(_ context.Context, out *Output) (Score, error) {
		return equals(out.Text, want), nil
	})
}

// EqualsExpected is [Equals] with the case's Expected answer.
func EqualsExpected() Evaluator {
	return Func("equals", func(_ context.Context, out *Output) (Score, error) {
		return equals(out.Text, out.Case.Expected), nil
	})
}

func equals(got, want string) Score {
	return verdict(strings.TrimSpace(got) == strings.TrimSpace(want),
		"the answer is "+quote(want), "the answer "+quote(got)+" is not "+quote(want))
}

// Contains passes an answer that contains s.
func Contains(s string) Evaluator {
	return Func("contains", func(_ context.Context, out *Output) (Score, error) {
		return contains(out.Text, s), nil
	})
}

// ContainsExpected is [Contains] with the case's Expected answer.
func ContainsExpected() Evaluator {
	return Func("contains", func(_ context.Context, out *Output) (Score, error) {
		return contains(out.Text, out.Case.Expected), nil
	})
}

func contains(got, want string) Score {
	return verdict(strings.Contains(got, want),
		"the answer contains "+quote(want), "the answer "+quote(got)+" does not contain "+quote(want))
}

// Regex passes an answer that re matches.
func Regex(re *regexp.Regexp) Evaluator {
	return Func("regex", func(_ context.Context, out *Output) (Score, error) {
		return verdict(re.MatchString(out.Text),
			"the answer matches "+re.String(), "the answer "+quote(out.Text)+" does not match "+re.String()), nil
	})
}
