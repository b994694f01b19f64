package main

import (
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/eval"
	"github.com/robby-go/robby/examples/internal/endpoint"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRunOffline runs the example against the cases' scripts, from another
// directory than its own, as go run ./examples/eval from the repository's
// root does: the table says which cases fail, the page is written there.
func TestRunOffline(t *testing.T) {
	t.Chdir(t.TempDir())
	var out strings.Builder
	rep, err := run(t.Context(), &out, "")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if rep.Runs != 25 || rep.Passed != 21 || rep.FailedCases != 3 {
		t.Errorf("want 21 of 25 runs passed and 3 cases failed, got %d of %d and %d\n%s", rep.Passed, rep.Runs, rep.FailedCases, out.String())
	}
	for _, want := range []string{"the model is scripted", "capital-sweden  5     3       0.60", "3 of 5 cases failed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
	if _, err := os.Stat("report.html"); err != nil {
		t.Error(err)
	}
}

// TestEvals is the dataset as a user's module runs it in go test: one
// subtest a case, against OPENAI_BASE_URL (skipped without it, failed
// without it when ROBBY_EVAL_REQUIRE is set). A case passes at 3 runs
// in 5: a real small model is not always right.
func TestEvals(t *testing.T) {
	baseURL := endpoint.BaseURL() // Test skips when OPENAI_BASE_URL is not set
	judge, err := robby.New(robby.WithBaseURL(baseURL), robby.WithModel(endpoint.Model()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { judge.Close() })
	d, err := eval.Load("cases.jsonl", judge)
	if err != nil {
		t.Fatal(err)
	}
	eval.Test(t, d, func(t *testing.T) *robby.Agent {
		a, err := robby.New(robby.WithBaseURL(baseURL), robby.WithModel(endpoint.Model()), robby.WithTools(lookup),
			robby.WithSystem("Answer briefly. Use the lookup tool for capitals."))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a
	}, eval.WithRepeat(5), eval.WithThreshold(0.6))
}

// TestEvalsScripted is TestEvals offline: the scripts play the model.
func TestEvalsScripted(t *testing.T) {
	script, err := eval.LoadScripted("cases.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(script.Close)
	t.Setenv(eval.EndpointEnv, script.Model.URL)
	judge, err := robby.New(robby.WithBaseURL(script.Judge.URL), robby.WithModel("scripted"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { judge.Close() })
	d, err := eval.Load("cases.jsonl", judge)
	if err != nil {
		t.Fatal(err)
	}
	rep := eval.Test(t, d, func(t *testing.T) *robby.Agent {
		a, err := robby.New(robby.WithBaseURL(script.Model.URL), robby.WithModel("scripted"), robby.WithTools(script.Tools()...))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a
	}, eval.WithRepeat(5), eval.WithThreshold(0.6))
	if rep == nil || !rep.OK {
		t.Errorf("every case passes 3 runs in 5 or more: %+v", rep)
	}
}
