package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/trunc"
)

// askInput is the ask tool's arguments.
type askInput struct {
	Prompt string `json:"prompt" jsonschema:"the task or question, with everything the agent needs to know"`
}

// ask runs the agent on the prompt in a conversation of its own. A failed run
// is a tool error, which the host's model reads. A cancelled call ends the run
// and its tools.
func (s *Server) ask(ctx context.Context, req *mcp.CallToolRequest, in askInput) (*mcp.CallToolResult, any, error) {
	if strings.TrimSpace(in.Prompt) == "" {
		return nil, nil, errors.New("the prompt is empty: say what the agent should do")
	}
	p := progress{session: req.Session, token: req.Params.GetProgressToken()}
	var (
		res    *robby.Result
		runErr error
		turn   int             // the turn whose answer was announced
		answer json.RawMessage // the typed answer, with Options.OutputSchema
	)
	for ev, err := range s.run(ctx, in.Prompt, &answer) {
		switch ev.Kind {
		case robby.EventText:
			if ev.Turn != turn {
				turn = ev.Turn
				p.send(ctx, fmt.Sprintf("turn %d: answering", ev.Turn))
			}
		case robby.EventToolCall:
			p.send(ctx, fmt.Sprintf("turn %d: calling %s %s", ev.Turn, ev.ToolCall.Name, clip(ev.ToolCall.Arguments)))
		case robby.EventToolResult:
			r := ev.ToolResult
			if r.Err != nil {
				p.send(ctx, fmt.Sprintf("turn %d: %s failed: %s", ev.Turn, r.Call.Name, clip(r.Err.Error())))
			} else {
				p.send(ctx, fmt.Sprintf("turn %d: %s done in %v", ev.Turn, r.Call.Name, r.Duration.Round(time.Millisecond)))
			}
		case robby.EventProgress:
			n := ev.Notice
			msg := fmt.Sprintf("turn %d: %s/%s at %v", ev.Turn, n.Server, n.Tool, n.Progress)
			if n.Total > 0 {
				msg += fmt.Sprintf(" of %v", n.Total)
			}
			if n.Message != "" {
				msg += ": " + clip(n.Message)
			}
			p.send(ctx, msg)
		case robby.EventDone:
			res, runErr = ev.Result, err
		}
	}
	if runErr != nil {
		if ctx.Err() != nil {
			return nil, nil, context.Cause(ctx)
		}
		msg := s.reported(runErr)
		if res != nil && res.Text != "" {
			// Nothing lost: what the agent wrote before it stopped.
			msg += "\n\nThe agent's answer so far:\n" + res.Text
		}
		return nil, nil, errors.New(msg)
	}
	if s.output != nil {
		// The go-sdk checks it against the output schema and sends it as
		// structured content and as text.
		return nil, answer, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Text}}}, nil, nil
}

// run streams a run of a fresh clone of the agent on prompt. With an output
// schema it is a typed run, its answer put in answer.
func (s *Server) run(ctx context.Context, prompt string, answer *json.RawMessage) iter.Seq2[robby.Event, error] {
	agent := s.agent.Clone()
	if s.output == nil {
		return agent.Stream(ctx, prompt)
	}
	return func(yield func(robby.Event, error) bool) {
		for ev, err := range robby.StreamTyped[json.RawMessage](ctx, agent, prompt, s.typed...) {
			if ev.Kind == robby.EventDone {
				*answer = ev.Value
			}
			if !yield(ev.Event, err) {
				return
			}
		}
	}
}

// reported returns what the host reads of a run's failure. The model's own API
// error, the turn limit, the budget reached and an answer that never fitted the
// output schema are shown as they are. Any other failure, such as the endpoint
// unreachable, shows only an id. The upstream address and dial errors are for
// the server's log alone.
func (s *Server) reported(err error) string {
	var apiErr *robby.APIError
	if errors.As(err, &apiErr) || errors.Is(err, robby.ErrMaxTurns) || errors.Is(err, robby.ErrBudget) ||
		errors.Is(err, robby.ErrInvalidAnswer) {
		return err.Error()
	}
	id := rand.Text()[:12]
	s.opts.Logger.Warn("mcpserver: ask failed", slog.String("id", id), slog.Any("err", err))
	return fmt.Sprintf("the agent failed (error id %s, in the server's log)", id)
}

// progress sends the notifications of one call, if its host asked for them
// with a progress token.
type progress struct {
	session *mcp.ServerSession
	token   any
	n       float64
}

func (p *progress) send(ctx context.Context, msg string) {
	if p.token == nil || p.session == nil {
		return
	}
	p.n++
	// A host that stops listening still gets its answer: a failed
	// notification is not the call's failure.
	_ = p.session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: p.n, Message: msg})
}

// maxNote bounds the bytes of arguments or errors a progress message
// repeats.
const maxNote = 200

// clip cuts s to maxNote bytes at a character boundary.
func clip(s string) string {
	return trunc.Excerpt(s, maxNote)
}
