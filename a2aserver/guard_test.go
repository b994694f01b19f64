package a2aserver_test

import (
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/a2aserver"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/robbytest/agenttest"
)

// guarded serves an agent whose output guards redact keys and block "beast",
// over a model that answers with replies.
func guarded(t *testing.T, replies ...robbytest.Reply) *fixture {
	t.Helper()
	model := agenttest.NewServer(t, replies...)
	agent := agenttest.New(t, model, robby.WithGuards(
		robby.Guard{Name: "no-keys", On: robby.GuardOutput, Pattern: regexp.MustCompile(`sk-[A-Za-z0-9]{20,}`),
			Action: robby.Redact, Replacement: "[secret]"},
		robby.Guard{Name: "no-beast", On: robby.GuardOutput, Pattern: regexp.MustCompile(`beast`), Action: robby.Block,
			Message: "Not here."}))
	h := a2aserver.New(agent, a2aserver.Options{Tokens: tokens})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close() })
	return &fixture{model: model, srv: srv, h: h}
}

// TestStreamUnderGuards streams answers that output guards redact and block:
// no piece of the secret, and none of a blocked answer's text, reaches the
// A2A client, in the stream or in the stored task.
func TestStreamUnderGuards(t *testing.T) {
	f := guarded(t, robbytest.LateSecret(), robbytest.Pieces("Here", " is", " the", " be", "ast."))
	c := f.client(t, "alice-token")
	read := func(prompt string) (string, *a2a.Task) {
		var told strings.Builder // every text the stream carried
		var last *a2a.Task
		for e, err := range c.SendStreamingMessage(t.Context(), message(prompt, "")) {
			if err != nil {
				t.Fatal(err)
			}
			switch e := e.(type) {
			case *a2a.TaskArtifactUpdateEvent:
				told.WriteString(string(e.Artifact.Parts[0].Content.(a2a.Text)))
			case *a2a.TaskStatusUpdateEvent:
				if e.Status.Message != nil {
					for _, p := range e.Status.Message.Parts {
						told.WriteString(p.Text())
					}
				}
				if e.Status.State.Terminal() {
					task, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: e.TaskID})
					if err != nil {
						t.Fatal(err)
					}
					last = task
				}
			}
		}
		return told.String(), last
	}

	told, task := read("What is my key?")
	if !strings.Contains(told, "[secret]") || task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("told %q, task %s: want the key redacted, the task completed", told, task.Status.State)
	}
	for i := 0; i+3 <= len(robbytest.Secret); i++ {
		if piece := robbytest.Secret[i : i+3]; strings.Contains(told, piece) || strings.Contains(artifactText(task), piece) {
			t.Fatalf("a piece of the secret, %q, reached the client", piece)
		}
	}

	told, task = read("Tell me about it")
	if strings.Contains(told, "Here is") || strings.Contains(artifactText(task), "Here is") {
		t.Errorf("told %q: a blocked answer streams none of its text", told)
	}
	if task.Status.State != a2a.TaskStateFailed || !strings.Contains(statusText(task), `guard "no-beast" blocked the output`) {
		t.Errorf("task %s, status %q: want it failed, naming the guard", task.Status.State, statusText(task))
	}
}

// statusText is the text of a task's status message.
func statusText(task *a2a.Task) string {
	if task.Status.Message == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range task.Status.Message.Parts {
		b.WriteString(p.Text())
	}
	return b.String()
}
