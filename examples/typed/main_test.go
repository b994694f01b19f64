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

// TestRunOffline runs the example against its scripted model: the first
// answer lacks the priority the schema requires, the repaired one is printed.
func TestRunOffline(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, &out, config{}); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	for _, want := range []string{
		"the model is scripted",
		"name:     Ada Lovelace\n",
		"email:    ada@engines.example\n",
		"company:  Analytical Engines Ltd\n",
		"topics:   team pricing; on-premise option\n",
		"priority: high\n",
		`as JSON:  {"name":"Ada Lovelace","email":"ada@engines.example","company":"Analytical Engines Ltd",`,
		"2 requests,",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q\noutput:\n%s", want, out.String())
		}
	}
}
