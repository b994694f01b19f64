package openaiserver

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/chattext"
	"github.com/robby-go/robby/internal/httpapi"
)

// responsesReply writes the answer to one Responses request, as a response
// object or as a stream of events. The stream starts with response.created.
// Each message then sends output_item.added, content_part.added,
// output_text.delta..., output_text.done, content_part.done and
// output_item.done. Each call of the client's functions sends
// output_item.added, function_call_arguments.delta and .done, and
// output_item.done. Last comes response.completed (or response.incomplete).
type responsesReply struct {
	w       http.ResponseWriter
	resp    wireResponse
	seq     int64
	started bool             // the stream's headers were written
	text    *strings.Builder // the open message's text, nil when none is open
	items   int              // the output items streamed
	agent   string           // a team's: the agent of the events streaming
	res     *robby.Result    // the run's, once it ended
	// created is the write of the response's conversation, nil when it
	// needs none; announced is closed once the stream started after it.
	created   *creation
	announced chan struct{}
	buf       []byte // an event's bytes, reused
}

// complete writes a plain reply.
func (rr *responsesReply) complete(res *robby.Result, err error) {
	rr.done(res, err)
	httpapi.WriteJSON(rr.w, http.StatusOK, rr.resp)
}

// done sets the response's output, usage and status, as the run ended.
func (rr *responsesReply) done(res *robby.Result, err error) {
	rr.res = res
	raws := make([]json.RawMessage, 0, len(res.Messages))
	var agents []string // a team's: each message's agent
	for i, m := range res.Messages {
		if raw, err := m.MarshalJSON(); err == nil {
			raws = append(raws, raw)
			if i < len(res.Agents) {
				agents = append(agents, res.Agents[i])
			}
		}
	}
	rr.resp.Output = outputItems(rr.resp.ID, raws, agents)
	if rr.resp.Text.structured() && err == nil && len(res.Pending) == 0 {
		// The answer alone: not the answers repaired before it, nor the
		// answer tool's call.
		rr.resp.Output = []wireOutputItem{messageItem(rr.resp.ID, 0, res.Text, "completed")}
	}
	u := &wireResponsesUsage{InputTokens: res.Usage.PromptTokens, OutputTokens: res.Usage.CompletionTokens,
		TotalTokens: res.Usage.TotalTokens}
	u.InputTokensDetails.CachedTokens = res.Usage.CachedPromptTokens
	u.OutputTokensDetails.ReasoningTokens = res.Usage.ReasoningTokens
	rr.resp.Usage = u
	rr.resp.Status = "completed"
	switch {
	case errors.Is(err, robby.ErrMaxTurns):
		rr.resp.Status, rr.resp.IncompleteDetails = "incomplete", &wireIncomplete{Reason: "max_turns"}
	case errors.Is(err, robby.ErrBudget):
		rr.resp.Status, rr.resp.IncompleteDetails = "incomplete", &wireIncomplete{Reason: "budget"}
	}
}

// storedMessage is what outputItems reads of a chat message.
type storedMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// outputItems returns the output of a response whose run made msgs. It holds
// the text of each assistant message, then the last one's calls that have no
// result: the calls of the client's functions. The agent's own tool calls and
// results stay out, as in a chat completion. agents, if not nil, names each
// message's agent (a team's): each item names it too.
func outputItems(id string, msgs []json.RawMessage, agents []string) []wireOutputItem {
	items := []wireOutputItem{}
	var last []wireToolCall
	var lastAgent string
	results := map[string]bool{}
	for i, raw := range msgs {
		var m storedMessage
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		switch m.Role {
		case "assistant":
			if i < len(agents) {
				lastAgent = agents[i]
			}
			if t := chattext.Content(m.Content); t != "" {
				items = append(items, messageItem(id, len(items), t, "completed"))
				items[len(items)-1].Agent = lastAgent
			}
			last = m.ToolCalls
		case "tool":
			results[m.ToolCallID] = true
		}
	}
	for _, c := range last {
		if !results[c.ID] {
			items = append(items, callItem(id, len(items), c, "completed"))
			items[len(items)-1].Agent = lastAgent
		}
	}
	return items
}

// itemID names output item i of response id.
func itemID(kind, id string, i int) string {
	return fmt.Sprintf("%s_%s_%d", kind, strings.TrimPrefix(id, responsePrefix), i)
}

func messageItem(id string, i int, text, status string) wireOutputItem {
	item := wireOutputItem{ID: itemID("msg", id, i), Type: "message", Status: status, Role: "assistant",
		Content: []wireOutputText{}}
	if status == "completed" {
		item.Content = append(item.Content, outputText(text))
	}
	return item
}

func outputText(text string) wireOutputText {
	return wireOutputText{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}}
}

func callItem(id string, i int, c wireToolCall, status string) wireOutputItem {
	args := c.Function.Arguments
	if status != "completed" {
		args = ""
	}
	return wireOutputItem{ID: itemID("fc", id, i), Type: "function_call", Status: status, CallID: c.ID,
		Name: c.Function.Name, Arguments: &args}
}

// stream writes the events of a run, after announce. A run that fails is
// reported by fail in the stream, whenever it fails, as OpenAI does. It returns
// the error of the conversation's write, which stops the run, and writes
// nothing then.
func (rr *responsesReply) stream(events iter.Seq2[robby.Event, error]) error {
	for ev, err := range events {
		if rr.announced != nil { // the first event
			if err := rr.waitAnnounced(); err != nil {
				return err
			}
		}
		if ev.Agent != "" {
			rr.agent = ev.Agent
		}
		switch ev.Kind {
		case robby.EventText:
			rr.delta(ev.Delta)
		case robby.EventToolCall, robby.EventTurnEnd:
			rr.closeText()
		case robby.EventDone:
			if err != nil && !limited(err) {
				return err
			}
			rr.finish(ev.Result, err)
			rr.flush()
			return nil
		}
		rr.flush()
	}
	return cmp.Or(rr.waitAnnounced(), errors.New("robby: stream ended without a result"))
}

// announce starts the stream once the response's conversation is stored. The
// write goes on while the model is asked, so announce writes from a goroutine of
// its own; stream writes nothing before it is done. The client so never holds
// an ID that names nothing: it has the ID to cancel the response, or to GET it.
func (rr *responsesReply) announce() {
	if rr.created == nil {
		rr.start()
		return
	}
	rr.announced = make(chan struct{})
	go func() {
		defer close(rr.announced)
		if rr.created.wait() == nil {
			rr.start()
		}
	}()
}

// waitAnnounced waits for announce's goroutine to end, and returns the error
// of the conversation's write.
func (rr *responsesReply) waitAnnounced() error {
	if rr.announced != nil {
		<-rr.announced
		rr.announced = nil
	}
	return rr.created.wait()
}

// start writes the stream's headers, response.created and
// response.in_progress.
func (rr *responsesReply) start() {
	if rr.started {
		return
	}
	rr.started = true
	httpapi.StartSSE(rr.w)
	rr.event(wireEvent{Type: "response.created", Response: &rr.resp})
	rr.event(wireEvent{Type: "response.in_progress", Response: &rr.resp})
	rr.flush()
}

// delta streams text, in the open message or a new one.
func (rr *responsesReply) delta(d string) {
	rr.start()
	i := rr.items
	id := itemID("msg", rr.resp.ID, i)
	if rr.text == nil {
		rr.text = new(strings.Builder)
		item := messageItem(rr.resp.ID, i, "", "in_progress")
		item.Agent = rr.agent
		rr.event(wireEvent{Type: "response.output_item.added", OutputIndex: &i, Item: &item})
		part := outputText("")
		rr.event(wireEvent{Type: "response.content_part.added", OutputIndex: &i, ItemID: id, ContentIndex: new(int), Part: &part})
	}
	rr.text.WriteString(d)
	rr.event(wireEvent{Type: "response.output_text.delta", OutputIndex: &i, ItemID: id, ContentIndex: new(int), Delta: &d,
		Logprobs: []any{}})
}

// closeText ends the open message, if any.
func (rr *responsesReply) closeText() {
	if rr.text == nil {
		return
	}
	i, text := rr.items, rr.text.String()
	id := itemID("msg", rr.resp.ID, i)
	rr.event(wireEvent{Type: "response.output_text.done", OutputIndex: &i, ItemID: id, ContentIndex: new(int), Text: &text,
		Logprobs: []any{}})
	part := outputText(text)
	rr.event(wireEvent{Type: "response.content_part.done", OutputIndex: &i, ItemID: id, ContentIndex: new(int), Part: &part})
	item := messageItem(rr.resp.ID, i, text, "completed")
	item.Agent = rr.agent
	rr.event(wireEvent{Type: "response.output_item.done", OutputIndex: &i, Item: &item})
	rr.text, rr.items = nil, rr.items+1
}

// finish streams the calls of the client's functions, then the response
// as it ended.
func (rr *responsesReply) finish(res *robby.Result, err error) {
	rr.start()
	rr.closeText()
	rr.done(res, err)
	for i := rr.items; i < len(rr.resp.Output); i++ {
		item := rr.resp.Output[i]
		if item.Type == "message" { // the structured answer, when it came in no text event
			rr.delta(item.Content[0].Text)
			rr.closeText()
			continue
		}
		added := item
		empty := ""
		added.Status, added.Arguments = "in_progress", &empty
		rr.event(wireEvent{Type: "response.output_item.added", OutputIndex: &i, Item: &added})
		rr.event(wireEvent{Type: "response.function_call_arguments.delta", OutputIndex: &i, ItemID: item.ID, Delta: item.Arguments})
		rr.event(wireEvent{Type: "response.function_call_arguments.done", OutputIndex: &i, ItemID: item.ID, Name: item.Name,
			Arguments: item.Arguments})
		rr.event(wireEvent{Type: "response.output_item.done", OutputIndex: &i, Item: &item})
	}
	kind := "response.completed"
	if rr.resp.Status == "incomplete" {
		kind = "response.incomplete"
	}
	rr.event(wireEvent{Type: kind, Response: &rr.resp})
}

// event writes an event of the stream. The events of one step of the run
// go out together: flush sends them.
func (rr *responsesReply) event(e wireEvent) {
	e.SequenceNumber = rr.seq
	rr.seq++
	b, _ := json.Marshal(e)
	rr.buf = append(append(append(append(append(rr.buf[:0], "event: "...), e.Type...), "\ndata: "...), b...), "\n\n"...)
	rr.w.Write(rr.buf)
}

// flush sends the events written, in one write rather than one each.
func (rr *responsesReply) flush() {
	if f, ok := rr.w.(http.Flusher); ok {
		f.Flush()
	}
}

// cancelled ends a response that POST /v1/responses/{id}/cancel stopped. A
// plain reply is the response, "cancelled". A stream closes its open message
// and ends, as OpenAI has no event for it.
func (rr *responsesReply) cancelled() {
	rr.resp.Status = "cancelled"
	if rr.started {
		rr.closeText()
		return
	}
	httpapi.WriteJSON(rr.w, http.StatusOK, rr.resp)
}

// fail reports err: with its status while nothing was written, else as an error
// event and response.failed, as OpenAI does.
func (rr *responsesReply) fail(err error, requestID string) {
	status, typ, code, msg := runError(err, requestID)
	if ans, ok := errors.AsType[*robby.AnswerError](err); ok {
		typ, code = "server_error", "invalid_answer"
		msg = fmt.Sprintf("The model's answer does not fit 'text.format' after %d answers: %s", ans.Attempts, strings.Join(ans.Failures, "; "))
	}
	rr.resp.Status, rr.resp.Error = "failed", &wireResponseError{Code: "server_error", Message: msg}
	if !rr.started {
		writeAPIError(rr.w, status, typ, code, msg)
		return
	}
	rr.closeText()
	rr.event(wireEvent{Type: "error", Code: cmp.Or(code, "upstream_error"), Message: msg, Param: json.RawMessage("null")})
	rr.event(wireEvent{Type: "response.failed", Response: &rr.resp})
}
