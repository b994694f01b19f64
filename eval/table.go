package eval

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode"
)

// WriteTable writes r as a table for a terminal. It shows a line a case, the
// overall figures, and the comparison with a baseline. It also shows the first
// failure of each failing case. Control characters in model text are replaced,
// so an answer cannot drive the terminal.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "CASE\tRUNS\tPASSED\tPASS RATE\t95%% CI\tPASS^%d\tTOKENS\tCOST\tP50\tP95\t\n", r.K)
	for _, c := range r.Cases {
		mark := ""
		if !c.OK {
			mark = "FAIL"
		}
		row(tw, clean(c.Name), &c.Stats, mark)
	}
	mark := "ok"
	if !r.OK {
		mark = fmt.Sprintf("%d of %d cases failed", r.FailedCases, len(r.Cases))
	}
	row(tw, "overall", &r.Stats, mark)
	if err := tw.Flush(); err != nil {
		return err
	}
	if u := r.JudgeUsage; u.TotalTokens > 0 {
		fmt.Fprintf(w, "judging: %d tokens, cost %.4g\n", u.TotalTokens, u.Cost)
	}
	r.writeComparison(w)
	for _, c := range r.Cases {
		if !c.OK && len(c.Failures) > 0 {
			f := c.Failures[0]
			fmt.Fprintf(w, "%s, run %d: %s\n", clean(c.Name), f.Run, clean(cut(strings.Join(f.Reasons, "; "), 300)))
		}
	}
	return nil
}

func row(w io.Writer, name string, s *Stats, mark string) {
	fmt.Fprintf(w, "%s\t%d\t%d\t%.2f\t[%.2f, %.2f]\t%.2f\t%d\t%.4g\t%.2fs\t%.2fs\t%s\n", name, s.Runs, s.Passed, s.PassRate,
		s.PassRateLow, s.PassRateHigh, s.PassHatK, s.Usage.TotalTokens, s.Usage.Cost, s.LatencyP50, s.LatencyP95, mark)
}

func (r *Report) writeComparison(w io.Writer) {
	cmp := r.Comparison
	if cmp == nil {
		return
	}
	fmt.Fprintf(w, "against %s: %d regressed, %d improved, %d within noise (Fisher's exact test, p < %g)\n",
		clean(cmp.Baseline), len(cmp.Regressed), len(cmp.Improved), cmp.Unchanged, Alpha)
	for _, ch := range cmp.Regressed {
		fmt.Fprintf(w, "  regressed: %s\n", change(ch))
	}
	for _, ch := range cmp.Improved {
		fmt.Fprintf(w, "  improved: %s\n", change(ch))
	}
	if len(cmp.Added) > 0 {
		fmt.Fprintf(w, "  new cases: %s\n", clean(strings.Join(cmp.Added, ", ")))
	}
	if len(cmp.Removed) > 0 {
		fmt.Fprintf(w, "  cases gone: %s\n", clean(strings.Join(cmp.Removed, ", ")))
	}
}

func change(ch Change) string {
	return fmt.Sprintf("%s %d/%d -> %d/%d (p = %.3g)", clean(ch.Name), ch.BaselinePassed, ch.BaselineRuns, ch.Passed, ch.Runs, ch.P)
}

// clean replaces control characters, escape sequences' first among them.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return ' '
		case unicode.IsControl(r):
			return '\uFFFD'
		}
		return r
	}, s)
}

// cut cuts s to n bytes, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
