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

// TestRun runs the demo and checks the lines that show each feature, in
// the order the demo prints them.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, &out); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	got := out.String()

	first, _, _ := strings.Cut(got, "\n")
	if !strings.Contains(first, "scripted") || !strings.Contains(first, "no LLM is called") {
		t.Errorf("first line = %q, want it to say the model is scripted", first)
	}

	// Each wanted line must follow the one before it. The results of the
	// two parallel calls may come in either order, so each is checked
	// against the call lines and the answer.
	ordered := []string{
		"1 │ think › Two independent greetings: one turn, two calls.",
		"1 │ model › Let me greet them both.",
		`1 │ call  › say_hello {"name":"Bob"}`,
		`1 │ call  › vulcan_salute {"name":"Spock"}`,
		"2 │ model › Done: I said hello to Bob and made a Vulcan salute to Spock.",
		"result: 2 turns, 2 tool calls, 43 tokens",
		`1 │ tool  › beam_up → Error: robby: unknown tool "beam_up"; the tools are: say_hello, vulcan_salute`,
		"2 │ model › I cannot beam anyone up",
		"the conversation holds 9 messages",
		"2 │ tool  › say_hello → 👋 Hello Uhura! 🙂",
		"error: robby: turn limit reached: 2 turns (errors.Is ErrMaxTurns: true)",
		"partial result: 2 turns, 2 tool calls",
		"2 │ model › I said hello to Kirk; the rest of the crew will have to wait.",
		"tools offered on turn 2: none",
	}
	pos := 0
	for _, want := range ordered {
		i := strings.Index(got[pos:], want)
		if i < 0 {
			t.Fatalf("missing, or out of order: %q\noutput:\n%s", want, got)
		}
		pos += i + len(want)
	}

	callsEnd := strings.Index(got, `vulcan_salute {"name":"Spock"}`)
	answer := strings.Index(got, "2 │ model › Done:")
	for _, result := range []string{
		"1 │ tool  › say_hello → 👋 Hello Bob! 🙂\n",
		"1 │ tool  › vulcan_salute → 🖖 Live long and prosper Spock\n",
	} {
		if i := strings.Index(got, result); i < callsEnd || i > answer {
			t.Errorf("tool result %q missing, or not between the calls and the answer\noutput:\n%s", result, got)
		}
	}

	if n := strings.Count(got, "\n"); n > 50 {
		t.Errorf("the demo prints %d lines; keep it under 50", n)
	}
}
