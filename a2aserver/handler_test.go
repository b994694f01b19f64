package a2aserver_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/robby-go/robby/a2aserver"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/robbytest/agenttest"
)

func TestCard(t *testing.T) {
	f := newFixture(t, a2aserver.Options{Description: "Adds numbers."})
	resp, err := http.Get(f.srv.URL + a2aserver.CardPath) // no token: the card is public
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card a2a.AgentCard
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	if card.Description != "Adds numbers." || len(card.Skills) != 1 || card.Skills[0].ID != "add" {
		t.Errorf("card %+v: want the description and the add skill", card)
	}
	if got := card.SupportedInterfaces[0]; got.URL != f.srv.URL+"/a2a" || got.ProtocolBinding != a2a.TransportProtocolJSONRPC {
		t.Errorf("interface %+v: want JSON-RPC at %s/a2a", got, f.srv.URL)
	}
	if _, ok := card.SecuritySchemes["bearer"].(a2a.HTTPAuthSecurityScheme); !ok || len(card.SecurityRequirements) != 1 {
		t.Errorf("security %+v %+v: want the bearer scheme, required", card.SecuritySchemes, card.SecurityRequirements)
	}
}

func TestCardPublicURLAndNoTools(t *testing.T) {
	model := agenttest.NewServer(t)
	h := a2aserver.New(agenttest.New(t, model), a2aserver.Options{PublicURL: "https://agents.example.com/"})
	defer h.Close()
	w := httptestRecorder(h, a2aserver.CardPath)
	var card a2a.AgentCard
	if err := json.Unmarshal(w, &card); err != nil {
		t.Fatal(err)
	}
	if card.SupportedInterfaces[0].URL != "https://agents.example.com/a2a" {
		t.Errorf("interface URL %q: want it under -public-url", card.SupportedInterfaces[0].URL)
	}
	if len(card.Skills) != 1 || card.Skills[0].ID != "chat" || card.Name != "robby" {
		t.Errorf("card %+v: an agent without tools has one skill, named for it", card)
	}
	if len(card.SecurityRequirements) != 0 || len(card.SecuritySchemes) != 0 {
		t.Errorf("no tokens, yet a scheme is declared: %+v %+v", card.SecuritySchemes, card.SecurityRequirements)
	}
	if got := httptestRecorder(h, "/a2a"+a2aserver.CardPath); string(got) != string(w) {
		t.Errorf("the card beside the endpoint is %s, want the same", got)
	}
}

func TestSendMessageCompletes(t *testing.T) {
	f := newFixture(t, a2aserver.Options{},
		robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)), robbytest.Text("1 + 2 = 3"))
	c := f.client(t, "alice-token")
	res, err := c.SendMessage(t.Context(), message("What is 1 + 2?", ""))
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateCompleted || artifactText(task) != "1 + 2 = 3" {
		t.Fatalf("result %#v: want a completed task answering 1 + 2 = 3", res)
	}
	got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCompleted || artifactText(got) != "1 + 2 = 3" {
		t.Fatalf("GetTask: %v, %+v", err, got)
	}
	list, err := c.ListTasks(t.Context(), &a2a.ListTasksRequest{})
	if err != nil || len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID {
		t.Fatalf("ListTasks: %v, %+v", err, list)
	}
}

func TestStreamTellsStepsAsTheyCome(t *testing.T) {
	f := newFixture(t, a2aserver.Options{},
		robbytest.ToolCalls(robbytest.Call("add", `{"a":1,"b":2}`)), robbytest.Pieces("1 + 2", " = 3"))
	c := f.client(t, "alice-token")
	var kinds []string
	var text string
	for e, err := range c.SendStreamingMessage(t.Context(), message("What is 1 + 2?", "")) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := e.(type) {
		case *a2a.Task:
			kinds = append(kinds, "task")
		case *a2a.TaskStatusUpdateEvent:
			k := string(e.Status.State)
			if m := e.Status.Message; m != nil {
				if d, ok := m.Parts[0].Content.(a2a.Data); ok {
					for key := range d.Value.(map[string]any) {
						k += ":" + key
					}
				}
			}
			kinds = append(kinds, k)
		case *a2a.TaskArtifactUpdateEvent:
			if !e.Append {
				text = "" // the last chunk replaces the pieces told
			}
			kinds = append(kinds, fmt.Sprintf("artifact(append=%v,last=%v)", e.Append, e.LastChunk))
			text += string(e.Artifact.Parts[0].Content.(a2a.Text))
		}
	}
	want := "task TASK_STATE_WORKING TASK_STATE_WORKING:toolCall TASK_STATE_WORKING:toolResult " +
		"artifact(append=false,last=false) artifact(append=false,last=true) TASK_STATE_COMPLETED"
	if got := strings.Join(kinds, " "); got != want || text != "1 + 2 = 3" {
		t.Errorf("events %s, text %q\nwant %s, text %q", got, text, want, "1 + 2 = 3")
	}
}

func TestContextContinues(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts a2aserver.Options
	}{{"memory", a2aserver.Options{}}, {"store", a2aserver.Options{Store: agenttest.NewStore(t)}}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.opts, robbytest.Text("Hello, Ann."), robbytest.Text("You are Ann."))
			c := f.client(t, "alice-token")
			res, err := c.SendMessage(t.Context(), message("I am Ann.", ""))
			if err != nil {
				t.Fatal(err)
			}
			first := res.(*a2a.Task)
			res, err = c.SendMessage(t.Context(), message("Who am I?", first.ContextID))
			if err != nil {
				t.Fatal(err)
			}
			second := res.(*a2a.Task)
			if second.ContextID != first.ContextID || second.ID == first.ID || artifactText(second) != "You are Ann." {
				t.Fatalf("second task %+v: want a new task in the first's context", second)
			}
			reqs := f.model.Requests()
			var seen []string
			for _, m := range reqs[1].Messages {
				seen = append(seen, m.Content)
			}
			if got := strings.Join(seen, "|"); !strings.Contains(got, "I am Ann.|Hello, Ann.|Who am I?") {
				t.Errorf("the second run read %q: want the first exchange before the question", got)
			}
			// Bob's message in Alice's context is a conversation of his own.
			f.model.Reply(robbytest.Text("Who?"))
			if _, err := f.client(t, "bob-token").SendMessage(t.Context(), message("Who am I?", first.ContextID)); err != nil {
				t.Fatal(err)
			}
			if got := f.model.Requests()[2].Messages; len(got) != 1 {
				t.Errorf("Bob's run read %d messages: want his own only", len(got))
			}
		})
	}
}

func TestOtherUsersCannotSubscribeToARunningTask(t *testing.T) {
	f, _, task := startSlowTask(t)
	for e, err := range f.client(t, "bob-token").SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Errorf("Bob subscribes to Alice's running task: %+v, %v: want ErrTaskNotFound", e, err)
		}
		break
	}
}

func TestCancelStopsTheRun(t *testing.T) {
	f, c, task := startSlowTask(t)
	if _, err := f.client(t, "bob-token").CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("Bob cancels Alice's task: %v, want ErrTaskNotFound", err)
	}
	got, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask: %v, %+v", err, got)
	}
	got, err = c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("GetTask after cancel: %v, %+v", err, got)
	}
}

func TestOtherUsersTasksAreNotFound(t *testing.T) {
	f := newFixture(t, a2aserver.Options{}, robbytest.Text("Hi."))
	res, err := f.client(t, "alice-token").SendMessage(t.Context(), message("Hi.", ""))
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	bob := f.client(t, "bob-token")
	if _, err := bob.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("Bob reads Alice's task: %v, want ErrTaskNotFound", err)
	}
	if list, err := bob.ListTasks(t.Context(), &a2a.ListTasksRequest{}); err != nil || len(list.Tasks) != 0 {
		t.Errorf("Bob lists %+v, %v: want none", list, err)
	}
	for e, err := range bob.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if err == nil {
			t.Errorf("Bob subscribes to Alice's task: %+v", e)
		}
		break
	}
	if _, err := f.client(t, "mallory-token").GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID}); err == nil {
		t.Error("a request with an unknown token was answered")
	}
}

func TestModelFailureFailsTheTask(t *testing.T) {
	f := newFixture(t, a2aserver.Options{}, robbytest.Error(http.StatusBadRequest, `{"error":{"message":"bad model"}}`))
	res, err := f.client(t, "alice-token").SendMessage(t.Context(), message("Hi.", ""))
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	if task.Status.State != a2a.TaskStateFailed || task.Status.Message == nil ||
		!strings.Contains(string(task.Status.Message.Parts[0].Content.(a2a.Text)), "bad model") {
		t.Fatalf("task %+v: want failed, saying why", task.Status)
	}
}

func TestLongAnswerIsToldInFewUpdates(t *testing.T) {
	pieces := make([]string, 5000)
	for i := range pieces {
		pieces[i] = "word "
	}
	f := newFixture(t, a2aserver.Options{}, robbytest.Pieces(pieces...))
	updates := 0
	c := f.client(t, "alice-token")
	start := time.Now()
	for e, err := range c.SendStreamingMessage(t.Context(), message("Talk.", "")) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := e.(*a2a.TaskArtifactUpdateEvent); ok {
			updates++
		}
	}
	// One update a delta would rewrite the task 5,000 times: one is told at
	// most every 100 ms, then the last chunk.
	if most := int(time.Since(start)/(100*time.Millisecond)) + 2; updates > most {
		t.Errorf("%d artifact updates for 5,000 deltas in %v: want at most %d", updates, time.Since(start), most)
	}
}

func TestCloseFailsTheRunsGoingOn(t *testing.T) {
	f, c, task := startSlowTask(t)
	f.h.Close()
	waitFor(t, func() bool {
		got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
		return err == nil && got.Status.State == a2a.TaskStateFailed &&
			strings.Contains(string(got.Status.Message.Parts[0].Content.(a2a.Text)), "server stopped")
	})
}

// startSlowTask sends Alice's message, answered at once, whose model
// request takes a minute; it returns once the model was asked.
func startSlowTask(t *testing.T) (*fixture, *a2aclient.Client, *a2a.Task) {
	t.Helper()
	return startSlowTaskWith(t, a2aserver.Options{})
}

// startSlowTaskWith is startSlowTask on a handler of opts.
func startSlowTaskWith(t *testing.T, opts a2aserver.Options) (*fixture, *a2aclient.Client, *a2a.Task) {
	t.Helper()
	f := newFixture(t, opts, robbytest.Text("late").WithDelay(time.Minute))
	c := f.client(t, "alice-token")
	req := message("Take your time.", "")
	req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	res, err := c.SendMessage(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(f.model.Requests()) == 1 })
	return f, c, res.(*a2a.Task)
}
