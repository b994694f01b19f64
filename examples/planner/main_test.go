package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRunOffline runs the example against its scripted model: the
// researcher's steps come nested under the planner's call, before its
// result, and its tokens count in the total.
func TestRunOffline(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, &out, config{}); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	got := out.String()
	ordered := []string{
		"the model is scripted",
		"→ research {\"prompt\":\"When is the Eiffel Tower open",
		"    → lookup {\"key\":\"opening_hours\"}",
		"    → lookup {\"key\":\"best_time\"}",
		"← research: Open 9:30 to 23:45 daily",
		"plan: Plan: arrive at 9:15",
		"2 planner turns, ",
	}
	pos := 0
	for _, want := range ordered {
		i := strings.Index(got[pos:], want)
		if i < 0 {
			t.Fatalf("missing, or out of order: %q\noutput:\n%s", want, got)
		}
		pos += i + len(want)
	}
	for _, want := range []string{"    ← lookup: 9:30 to 23:45 every day", "    ← lookup: 36.10 EUR to the top by lift"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q\noutput:\n%s", want, got)
		}
	}
	// Four requests of robbytest's default usage: the researcher's two
	// count in the planner's total.
	if !strings.Contains(got, "2 planner turns, ") || strings.Contains(got, " 0 tokens") {
		t.Errorf("usage not summed\noutput:\n%s", got)
	}
}
