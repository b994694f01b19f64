package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/robby-go/robby"
)

// A Report is what a dataset's runs did, overall and case by case. It is
// saved as JSON (its fields' tags name the keys) to be compared with a
// later run ([Compare]).
type Report struct {
	Name    string    `json:"name"`
	Started time.Time `json:"started"`
	// Seconds is how long the eval took, wall clock.
	Seconds float64 `json:"seconds"`
	// Repeat is the runs of each case; K the k of pass^k.
	Repeat int `json:"repeat"`
	K      int `json:"k"`
	// Threshold is the pass rate a case needs to pass.
	Threshold float64 `json:"threshold"`
	// OK says whether every case passed.
	OK bool `json:"ok"`
	// FailedCases counts the cases whose pass rate is under Threshold.
	FailedCases int `json:"failed_cases"`
	Stats
	Cases []CaseReport `json:"cases"`
	// Comparison is the comparison with a baseline, when [Compare] made it.
	Comparison *Comparison `json:"comparison,omitempty"`
}

// Stats are the figures of a set of runs: one case's, or all of them.
type Stats struct {
	Runs   int `json:"runs"`
	Passed int `json:"passed"`
	// PassRate is Passed/Runs, within [PassRateLow, PassRateHigh], its
	// 95 % Wilson interval.
	PassRate     float64 `json:"pass_rate"`
	PassRateLow  float64 `json:"pass_rate_low"`
	PassRateHigh float64 `json:"pass_rate_high"`
	// PassHatK estimates pass^k, the chance that k runs in a row all pass
	// (see the package doc); overall, the mean of the cases'.
	PassHatK float64 `json:"pass_hat_k"`
	// Errors counts the runs that ended in an error.
	Errors int `json:"errors"`
	// Scores are the evaluators' mean scores, by name.
	Scores map[string]float64 `json:"scores,omitempty"`
	// Usage sums the runs' tokens and cost; JudgeUsage that of judging.
	Usage      UsageStats `json:"usage"`
	JudgeUsage UsageStats `json:"judge_usage"`
	// LatencyP50 and LatencyP95 are the runs' durations' percentiles, in
	// seconds (nearest rank).
	LatencyP50 float64 `json:"latency_p50"`
	LatencyP95 float64 `json:"latency_p95"`
}

// UsageStats are tokens and cost, summed.
type UsageStats struct {
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	TotalTokens      int64   `json:"total_tokens"`
	Cost             float64 `json:"cost"`
}

func (u *UsageStats) add(v robby.Usage) {
	u.PromptTokens += v.PromptTokens
	u.CompletionTokens += v.CompletionTokens
	u.TotalTokens += v.TotalTokens
	u.Cost += v.Cost
}

// A CaseReport is what one case's runs did.
type CaseReport struct {
	Name string `json:"name"`
	// OK says whether the case's pass rate reached the threshold.
	OK bool `json:"ok"`
	Stats
	// PassHatKLow and PassHatKHigh bound pass^k: the pass rate's
	// interval raised to the power k.
	PassHatKLow  float64        `json:"pass_hat_k_low"`
	PassHatKHigh float64        `json:"pass_hat_k_high"`
	Input        string         `json:"input"`
	Expected     string         `json:"expected,omitempty"`
	Metadata     map[string]any `json:"metadata,omitempty"`
	// Failures are the failing runs, each with its reasons and messages.
	Failures []Failure `json:"failures,omitempty"`
}

// A Failure is a failing run: why, and the conversation.
type Failure struct {
	Run     int      `json:"run"`
	Reasons []string `json:"reasons"`
	Answer  string   `json:"answer"`
	Error   string   `json:"error,omitempty"`
	// Messages are the run's conversation as the chat-completions API
	// takes it: the case's messages, the prompt, the answers and tool
	// results.
	Messages []json.RawMessage `json:"messages"`
}

// report builds the report of the runs done.
func (h *harness) report(started time.Time) *Report {
	r := &Report{Name: h.d.Name, Started: started.UTC(), Seconds: time.Since(started).Seconds(),
		Repeat: h.cfg.repeat, K: h.cfg.k, Threshold: h.cfg.threshold, OK: true}
	var all []record
	for _, recs := range h.records {
		all = append(all, recs...)
	}
	r.Stats = stats(all, h.cfg.k)
	r.PassHatK = 0 // the cases' mean: pooled runs are not runs of one case
	for ci, recs := range h.records {
		cr := h.caseReport(&h.d.Cases[ci], recs)
		r.Cases = append(r.Cases, cr)
		r.PassHatK += cr.PassHatK / float64(len(h.records))
		if !cr.OK {
			r.OK = false
			r.FailedCases++
		}
	}
	return r
}

func (h *harness) caseReport(c *Case, recs []record) CaseReport {
	cr := CaseReport{Name: c.Name, Stats: stats(recs, h.cfg.k), Input: c.Input, Expected: c.Expected,
		Metadata: maps.Clone(c.Metadata)}
	cr.OK = cr.PassRate >= h.cfg.threshold
	k := float64(h.cfg.k)
	cr.PassHatKLow, cr.PassHatKHigh = math.Pow(cr.PassRateLow, k), math.Pow(cr.PassRateHigh, k)
	for _, rec := range recs {
		if !rec.pass {
			cr.Failures = append(cr.Failures, failure(c, rec))
		}
	}
	return cr
}

// stats sums up records.
func stats(recs []record, k int) Stats {
	s := Stats{Runs: len(recs)}
	var (
		durations []time.Duration
		sums      = map[string]float64{}
		counts    = map[string]int{}
	)
	for _, rec := range recs {
		if rec.pass {
			s.Passed++
		}
		if rec.out.Err != nil {
			s.Errors++
		}
		s.Usage.add(rec.out.Result.Usage)
		durations = append(durations, rec.out.Duration)
		for _, sc := range rec.scores {
			sums[sc.name] += sc.Value
			counts[sc.name]++
			s.JudgeUsage.add(sc.Usage)
		}
	}
	if s.Runs > 0 {
		s.PassRate = float64(s.Passed) / float64(s.Runs)
	}
	s.PassRateLow, s.PassRateHigh = wilson(s.Passed, s.Runs)
	s.PassHatK = passHatK(s.Passed, s.Runs, min(k, s.Runs))
	if len(sums) > 0 {
		s.Scores = make(map[string]float64, len(sums))
		for name, sum := range sums {
			s.Scores[name] = sum / float64(counts[name])
		}
	}
	s.LatencyP50 = percentile(durations, 50).Seconds()
	s.LatencyP95 = percentile(durations, 95).Seconds()
	return s
}

// failure describes a failing run.
func failure(c *Case, rec record) Failure {
	f := Failure{Run: rec.out.Run, Answer: rec.out.Text}
	if rec.out.Err != nil {
		f.Error = rec.out.Err.Error()
		f.Reasons = append(f.Reasons, "the run failed: "+f.Error)
	}
	for _, s := range rec.scores {
		if s.err != nil || !s.Pass {
			f.Reasons = append(f.Reasons, s.name+": "+s.Reason)
		}
	}
	for _, m := range slices.Concat(c.Messages, rec.out.Result.Messages) {
		if b, err := json.Marshal(m); err == nil {
			f.Messages = append(f.Messages, b)
		}
	}
	return f
}

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ReadReport reads a report written by [Report.WriteJSON], such as a
// baseline.
func ReadReport(rd io.Reader) (*Report, error) {
	var r Report
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, fmt.Errorf("eval: not a report: %w", err)
	}
	for i, c := range r.Cases {
		if c.Name == "" || c.Runs < 0 || c.Passed < 0 || c.Passed > c.Runs {
			return nil, fmt.Errorf("eval: not a report: case %d has no name or impossible counts", i+1)
		}
	}
	return &r, nil
}
