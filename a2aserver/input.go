package a2aserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby"
)

// A wireCall is a tool call as a client reads it.
type wireCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// An ask is what a task in INPUT_REQUIRED waits for. Its status message
// holds it as a data part: the calls to approve, with the turn's other
// calls that run once they are answered; or the calls of caller-run tools
// whose results the client gives. Agent names the agent of a team that made
// the calls, which runs them.
type ask struct {
	Approve   []wireCall `json:"approve,omitempty"`
	Others    []wireCall `json:"others,omitempty"`
	ToolCalls []wireCall `json:"toolCalls,omitempty"`
	Agent     string     `json:"agent,omitempty"`
}

// An answer is the data part of the client's message answering an ask.
type answer struct {
	Approvals []struct {
		ID       string `json:"id"`
		Approved bool   `json:"approved"`
		Reason   string `json:"reason,omitempty"`
	} `json:"approvals"`
	ToolResults []struct {
		ID      string `json:"id"`
		Output  string `json:"output"`
		IsError bool   `json:"isError,omitempty"`
	} `json:"toolResults"`
}

func wireCalls(calls []robby.ToolCall) []wireCall {
	w := make([]wireCall, len(calls))
	for i, c := range calls {
		w[i] = wireCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
	}
	return w
}

func toolCalls(w []wireCall) []robby.ToolCall {
	calls := make([]robby.ToolCall, len(w))
	for i, c := range w {
		calls[i] = robby.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
	}
	return calls
}

// needsApproval reports whether a call of the agent's own tools waits for
// the client's approval.
func (x *executor) needsApproval(c robby.ToolCall) bool {
	return slices.Contains(x.approve, "*") || slices.Contains(x.approve, c.Name)
}

// isCaller reports whether a call is of a caller-run tool.
func (x *executor) isCaller(c robby.ToolCall) bool {
	return slices.ContainsFunc(x.callerTools, func(t openai.FunctionDefinitionParam) bool { return t.Name == c.Name })
}

// askOf is what the calls a turn paused on ask of the client, or nil when
// the server runs them all now.
func (x *executor) askOf(pending []robby.ToolCall) *ask {
	if slices.ContainsFunc(pending, x.isCaller) {
		return &ask{ToolCalls: wireCalls(pending)} // a paused run holds the caller's calls alone
	}
	var a ask
	for _, c := range pending {
		if x.needsApproval(c) {
			a.Approve = append(a.Approve, wireCalls([]robby.ToolCall{c})...)
		} else {
			a.Others = append(a.Others, wireCalls([]robby.ToolCall{c})...)
		}
	}
	if len(a.Approve) == 0 {
		return nil
	}
	return &a
}

// askMessage is the status message of a task waiting for the client: in
// words, then as data. problem, if set, says why an answer was not read.
func askMessage(ec *a2asrv.ExecutorContext, a *ask, problem string) *a2a.Message {
	var b strings.Builder
	if problem != "" {
		fmt.Fprintf(&b, "Your answer could not be read: %s.\n", problem)
	}
	if len(a.Approve) > 0 {
		b.WriteString("Approve these tool calls? Answer yes or no, or with an approvals data part.")
	}
	if len(a.ToolCalls) > 0 {
		b.WriteString("Run these tool calls and answer with a toolResults data part.")
	}
	for _, c := range append(slices.Clone(a.Approve), a.ToolCalls...) {
		fmt.Fprintf(&b, "\n- %s %s", c.Name, c.Arguments)
	}
	var data map[string]any
	js, _ := json.Marshal(a) // of strings alone: never fails
	_ = json.Unmarshal(js, &data)
	return a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(b.String()), a2a.NewDataPart(data))
}

// askOfTask is what a task in INPUT_REQUIRED waits for, read back from its
// status message.
func askOfTask(t *a2a.Task) (*ask, error) {
	if m := t.Status.Message; m != nil {
		for _, p := range m.Parts {
			if d, ok := p.Content.(a2a.Data); ok {
				var a ask
				if err := remarshal(d.Value, &a); err != nil {
					return nil, err
				}
				return &a, nil
			}
		}
	}
	return nil, errors.New("the task waits for input, yet its status says for what")
}

// remarshal decodes v, as a data part holds it, into dst.
func remarshal(v any, dst any) error {
	js, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(js)))
	dec.DisallowUnknownFields()
	return dec.Decode(dst)
}

// errAnswer is an answer that does not answer the ask: the task asks again.
type errAnswer string

func (e errAnswer) Error() string { return string(e) }

// answerOf reads the client's answer to a, as approvals by call ID or as
// the caller-run tools' results.
func answerOf(m *a2a.Message, a *ask) (approved map[string]string, results []robby.ToolResult, err error) {
	if m == nil || len(m.Parts) != 1 {
		return nil, nil, errAnswer("answer with one part")
	}
	if t, ok := m.Parts[0].Content.(a2a.Text); ok && len(a.Approve) > 0 {
		yes := strings.EqualFold(strings.TrimSpace(string(t)), "yes")
		if !yes && !strings.EqualFold(strings.TrimSpace(string(t)), "no") {
			return nil, nil, errAnswer(`answer "yes" or "no"`)
		}
		approved = map[string]string{}
		for _, c := range a.Approve {
			approved[c.ID] = ""
			if !yes {
				approved[c.ID] = "the client said no"
			}
		}
		return approved, nil, nil
	}
	d, ok := m.Parts[0].Content.(a2a.Data)
	var ans answer
	if !ok || remarshal(d.Value, &ans) != nil {
		return nil, nil, errAnswer("the data part holds neither approvals nor toolResults")
	}
	if len(a.Approve) > 0 {
		return approvalsOf(ans, a)
	}
	for _, r := range ans.ToolResults {
		i := slices.IndexFunc(a.ToolCalls, func(c wireCall) bool { return c.ID == r.ID })
		if i < 0 {
			return nil, nil, errAnswer(fmt.Sprintf("no call with id %q waits for a result", r.ID))
		}
		res := robby.ToolResult{Call: toolCalls(a.ToolCalls[i : i+1])[0], Output: r.Output}
		if r.IsError {
			res.Err = errors.New(r.Output)
		}
		results = append(results, res)
	}
	return nil, results, nil
}

// approvalsOf reads an approvals data part: the reason of each refusal by
// call ID, "" for an approval. A call it does not name is refused.
func approvalsOf(ans answer, a *ask) (map[string]string, []robby.ToolResult, error) {
	approved := map[string]string{}
	for _, c := range a.Approve {
		approved[c.ID] = "no answer was given"
	}
	for _, v := range ans.Approvals {
		if _, ok := approved[v.ID]; !ok {
			return nil, nil, errAnswer(fmt.Sprintf("no call with id %q waits for an approval", v.ID))
		}
		approved[v.ID] = ""
		if !v.Approved {
			approved[v.ID] = cmp.Or(v.Reason, "the client said no")
		}
	}
	return approved, nil, nil
}

// caller is the agent that made a turn's calls: the team's agent of that
// name, else the served agent. Each runs its tools with its own approval
// and middleware.
func (x *executor) caller(name string) *robby.Agent {
	if a := x.agent.TeamAgent(name); a != nil {
		return a
	}
	return x.agent.Clone()
}

// runAnswered runs the calls of a turn that paused for approvals: the
// approved ones and the others; a refused one gets an error result. Each
// result is told as the stream tells a tool's.
func (x *executor) runAnswered(ctx context.Context, a *ask, refused map[string]string, s *taskStream) ([]robby.ToolResult, bool) {
	var run []robby.ToolCall
	var results []robby.ToolResult
	for _, c := range toolCalls(append(slices.Clone(a.Approve), a.Others...)) {
		if why := refused[c.ID]; why != "" {
			results = append(results, robby.ToolResult{Call: c, Err: fmt.Errorf("%w: %s", robby.ErrNotApproved, why)})
		} else {
			run = append(run, c)
		}
	}
	if len(run) > 0 {
		ran, err := x.caller(a.Agent).ExecuteToolCalls(ctx, run)
		if err != nil && ctx.Err() == nil {
			x.log.WarnContext(ctx, "robby: A2A approved tool calls", "error", err)
		}
		results = append(results, ran...)
	}
	for _, r := range results {
		if !s.result(r) {
			return nil, false
		}
	}
	return results, true
}

// refuseWaiting refuses the calls of the context's conversation that still
// wait for the client's approval, when a new message comes instead of the
// answer: neither run, nor run again as after a crash.
func (x *executor) refuseWaiting(ctx context.Context, ec *a2asrv.ExecutorContext, conv *robby.Agent) []robby.ToolResult {
	var msgs []json.RawMessage
	if x.store != nil {
		_, stored, err := x.store.Load(ctx, ec.User.Name, ec.ContextID)
		if err != nil {
			return nil // a new conversation, or the run reports the store's error
		}
		for _, m := range stored {
			if m.Chat != nil {
				msgs = append(msgs, m.Chat)
			}
		}
	} else {
		for _, m := range conv.Messages() {
			js, err := json.Marshal(m)
			if err != nil {
				return nil
			}
			msgs = append(msgs, js)
		}
	}
	var refused []robby.ToolResult
	for _, c := range waiting(msgs) {
		if x.needsApproval(c) {
			refused = append(refused, robby.ToolResult{Call: c,
				Err: fmt.Errorf("%w: a new message came instead of the answer", robby.ErrNotApproved)})
		}
	}
	return refused
}

// waiting is the calls of a conversation's last turn still without a
// result, from its messages as JSON.
func waiting(msgs []json.RawMessage) []robby.ToolCall {
	answered := map[string]bool{}
	for i := len(msgs) - 1; i >= 0; i-- {
		var m struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string                           `json:"id"`
				Function struct{ Name, Arguments string } `json:"function"`
			} `json:"tool_calls"`
		}
		if json.Unmarshal(msgs[i], &m) != nil || m.Role != "tool" && m.Role != "assistant" {
			return nil
		}
		if m.Role == "tool" {
			answered[m.ToolCallID] = true
			continue
		}
		var calls []robby.ToolCall
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				calls = append(calls, robby.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
			}
		}
		return calls
	}
	return nil
}

// asking is the status of a durable task whose run waits for approvals:
// it notes the events told, which the answer's execution goes on from.
func asking(ec *a2asrv.ExecutorContext, waits *ask, told int) *a2a.TaskStatusUpdateEvent {
	e := a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, askMessage(ec, waits, ""))
	e.Metadata = map[string]any{durableToldKey: told}
	return e
}

// told is the count of its run's events a durable task told before it
// asked.
func told(task *a2a.Task) int {
	switch n := task.Metadata[durableToldKey].(type) {
	case float64: // as stored, in JSON
		return int(n)
	case int:
		return n
	}
	return 0
}

// unanswered is the calls of waits not answered yet: the run may not have
// read the answers sent.
func unanswered(waits []robby.ToolCall, answered []wireCall) []robby.ToolCall {
	return slices.DeleteFunc(slices.Clone(waits), func(c robby.ToolCall) bool {
		return slices.ContainsFunc(answered, func(w wireCall) bool { return w.ID == c.ID })
	})
}

// sendApprovals sends the client's answer to each call the run waits for.
func (x *executor) sendApprovals(ctx context.Context, run string, calls []wireCall, refused map[string]string) error {
	for _, c := range calls {
		why := refused[c.ID]
		if err := x.durable.Approve(ctx, run, c.ID, why == "", why); err != nil {
			return err
		}
	}
	return nil
}
