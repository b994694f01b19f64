package eval

// Alpha is the p-value under which [Compare] calls a change real. It is the
// chance that a case as good as before shows such a change by luck alone.
const Alpha = 0.05

// A Comparison says how a report's cases changed since a baseline.
type Comparison struct {
	Baseline string `json:"baseline"`
	// Regressed and Improved are the cases whose pass rate changed beyond
	// noise: Fisher's exact test, two-sided, p < Alpha.
	Regressed []Change `json:"regressed"`
	Improved  []Change `json:"improved"`
	// Unchanged counts the cases in both whose change is within noise.
	Unchanged int `json:"unchanged"`
	// Added and Removed name the cases of one report only.
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// A Change is a case's pass counts in the baseline and now.
type Change struct {
	Name           string  `json:"name"`
	BaselineRuns   int     `json:"baseline_runs"`
	BaselinePassed int     `json:"baseline_passed"`
	Runs           int     `json:"runs"`
	Passed         int     `json:"passed"`
	BaselineRate   float64 `json:"baseline_pass_rate"`
	PassRate       float64 `json:"pass_rate"`
	// P is the p-value of Fisher's exact test on the two.
	P float64 `json:"p_value"`
}

// Compare compares the cases of r with those of the same name in baseline, sets
// r.Comparison and returns it. Noise is judged case by case, with Fisher's
// exact test on the passes and failures of both. Only a change that luck would
// give less than 5 % of the time counts. With few runs nothing does (5 of 5 to
// 2 of 5 is p = 0.17): repeat the runs.
func Compare(baseline, r *Report) *Comparison {
	cmp := &Comparison{Baseline: baseline.Name}
	old := make(map[string]*CaseReport, len(baseline.Cases))
	for i := range baseline.Cases {
		old[baseline.Cases[i].Name] = &baseline.Cases[i]
	}
	for _, c := range r.Cases {
		b, ok := old[c.Name]
		if !ok {
			cmp.Added = append(cmp.Added, c.Name)
			continue
		}
		delete(old, c.Name)
		ch := Change{Name: c.Name, BaselineRuns: b.Runs, BaselinePassed: b.Passed, Runs: c.Runs, Passed: c.Passed,
			BaselineRate: b.PassRate, PassRate: c.PassRate, P: fisher(b.Passed, b.Runs, c.Passed, c.Runs)}
		switch {
		case ch.P >= Alpha:
			cmp.Unchanged++
		case c.PassRate < b.PassRate:
			cmp.Regressed = append(cmp.Regressed, ch)
		default:
			cmp.Improved = append(cmp.Improved, ch)
		}
	}
	for _, c := range baseline.Cases {
		if _, ok := old[c.Name]; ok {
			cmp.Removed = append(cmp.Removed, c.Name)
		}
	}
	r.Comparison = cmp
	return cmp
}
