package a2atool_test

import (
	"context"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/a2atool"
	"github.com/robby-go/robby/internal/a2atest"
	"github.com/robby-go/robby/robbytest"
)

// shop is an A2A agent's executor, run by a2a-go's own server (a2asrv). The
// prompt picks what it does.
type shop struct {
	mu       sync.Mutex
	canceled []a2a.TaskID
	told     chan struct{} // "slow" waits after its first piece until it is closed
}

func (s *shop) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	prompt := ec.Message.Parts[0].Text()
	say := func(text string) *a2a.Message { return a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(text)) }
	return func(yield func(a2a.Event, error) bool) {
		if prompt == "message" {
			yield(say("a plain answer"), nil)
			return
		}
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) ||
			!yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, say("looking up prices")), nil) {
			return
		}
		switch prompt {
		case "fail":
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, say("no stock")), nil)
		case "input":
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, say("which size?")), nil)
		case "hang":
			<-ctx.Done()
		case "slow": // pieces, then the whole text as the last chunk, as robby's a2aserver tells an answer
			first := a2a.NewArtifactEvent(ec, a2a.NewTextPart("42 "))
			more := a2a.NewArtifactUpdateEvent(ec, first.Artifact.ID, a2a.NewTextPart("euros"))
			more.Append = true
			whole := a2a.NewArtifactUpdateEvent(ec, first.Artifact.ID, a2a.NewTextPart("42 euros"))
			whole.Append, whole.LastChunk = false, true
			if !yield(first, nil) {
				return
			}
			select {
			case <-s.told:
			case <-ctx.Done():
				return
			}
			if yield(more, nil) && yield(whole, nil) {
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
			}
		default:
			first := a2a.NewArtifactEvent(ec, a2a.NewTextPart("42 "))
			more := a2a.NewArtifactUpdateEvent(ec, first.Artifact.ID, a2a.NewTextPart("euros"))
			more.Append = true
			if yield(first, nil) && yield(more, nil) {
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
			}
		}
	}
}

func (s *shop) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	s.mu.Lock()
	s.canceled = append(s.canceled, ec.TaskID)
	s.mu.Unlock()
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// call has a robby agent call tool with prompt, and returns what the tool
// gave the model, and the progress the run streamed.
func call(t *testing.T, tool robby.Tool, prompt string) (robby.ToolResult, []string) {
	res, progress, _ := callStreamed(t, tool, prompt, nil)
	return res, progress
}

// callStreamed is call that also returns the remote agent's text, as the
// run streamed it, each piece passed to told as it comes.
func callStreamed(t *testing.T, tool robby.Tool, prompt string, told func(string)) (robby.ToolResult, []string, []string) {
	t.Helper()
	model := robbytest.NewServer()
	defer model.Close()
	model.Reply(robbytest.ToolCalls(robbytest.Call(tool.Name(), `{"prompt":"`+prompt+`"}`)), robbytest.Text("done"))
	a, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"), robby.WithTools(tool))
	require.NoError(t, err)
	defer a.Close()
	var res robby.ToolResult
	var progress, text []string
	for e, err := range a.Stream(t.Context(), "go") {
		require.NoError(t, err)
		if in, path := e.Innermost(); len(path) == 1 && path[0].Name == tool.Name() && in.Kind == robby.EventText {
			text = append(text, in.Delta)
			if told != nil {
				told(in.Delta)
			}
		}
		switch e.Kind {
		case robby.EventProgress:
			progress = append(progress, e.Notice.Server+": "+e.Notice.Message)
		case robby.EventToolResult:
			res = *e.ToolResult
		}
	}
	reqs := model.Requests()
	require.Len(t, reqs, 2)
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	assert.Equal(t, res.Output, last.Content, "the model reads what the tool gave")
	return res, progress, text
}

func TestRemoteAgent(t *testing.T) {
	const token = "s3cret-token"
	s := &shop{}
	srv := a2atest.Serve(t, "Price Checker", "Finds the price of a product.", token, s)
	tool, err := a2atool.New(t.Context(), srv.URL, a2atool.WithHeader("Authorization", "Bearer "+token),
		a2atool.WithTimeout(2*time.Second))
	require.NoError(t, err)
	assert.Equal(t, "price_checker", tool.Name(), "the card's name made a tool's")
	assert.Equal(t, "Finds the price of a product.", tool.Description())

	res, progress := call(t, tool, "price of a bike")
	require.NoError(t, res.Err)
	assert.Equal(t, "42 euros", res.Output, "the artifact, its chunks appended")
	assert.Equal(t, []string{"Price Checker: looking up prices"}, progress, "status updates streamed as progress")

	// The remote agent's text streams as it comes: "slow" waits, after its
	// first piece, for the run to have told it. Its last chunk, the whole
	// text again, adds nothing.
	s.told = make(chan struct{})
	res, _, text := callStreamed(t, tool, "slow", func(piece string) {
		if piece == "42 " {
			close(s.told)
		}
	})
	require.NoError(t, res.Err)
	assert.Equal(t, "42 euros", res.Output)
	assert.Equal(t, []string{"42 ", "euros"}, text, "the artifact's pieces, as the agent's text")

	res, _ = call(t, tool, "message")
	require.NoError(t, res.Err)
	assert.Equal(t, "a plain answer", res.Output)

	res, _ = call(t, tool, "fail")
	assert.ErrorContains(t, res.Err, `agent "Price Checker": the task ended failed: no stock`)
	assert.Contains(t, res.Output, "no stock")
	res, _ = call(t, tool, "input")
	assert.ErrorContains(t, res.Err, "asks for input required, which a tool call cannot give: which size?")

	start := time.Now()
	res, _ = call(t, tool, "hang")
	assert.ErrorIs(t, res.Err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 10*time.Second)
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.canceled) == 2 // the task waiting for input, and the one that hung
	}, 5*time.Second, 10*time.Millisecond, "a call that gives up cancels its task")
}

func TestRemoteAgentRefused(t *testing.T) {
	srv := a2atest.Serve(t, "Price Checker", "Finds the price of a product.", "right-token", &shop{})
	_, err := a2atool.New(t.Context(), srv.URL, a2atool.WithHeader("Authorization", "Bearer wrong-token"))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "wrong-token", "a header's value never reaches an error")

	_, err = a2atool.New(t.Context(), "http://127.0.0.1:1")
	assert.ErrorContains(t, err, "reading the agent card")
}
