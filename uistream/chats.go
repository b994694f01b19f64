package uistream

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/chattext"
	"github.com/robby-go/robby/internal/httpapi"
)

// wireChat is a stored chat as GET /api/chats lists it.
type wireChat struct {
	ID       string            `json:"id"`
	Title    string            `json:"title"`
	Messages int64             `json:"messages"`
	Usage    httpapi.WireUsage `json:"usage"`
	Created  time.Time         `json:"created"`
	Updated  time.Time         `json:"updated"`
}

func chatOf(c robby.Conversation) wireChat {
	return wireChat{ID: c.ID, Title: c.Title, Messages: c.Messages, Usage: httpapi.WireUsage(c.Usage), Created: c.Created, Updated: c.Updated}
}

// noStore answers the chat routes of a handler that keeps no chats.
func (h *Handler) noStore(w http.ResponseWriter) bool {
	if h.opts.Store != nil {
		return false
	}
	httpapi.WriteError(w, http.StatusNotFound, "invalid_request_error", "no_store", "",
		"This server keeps no chats (robby serve -store).")
	return true
}

// listChats answers GET /api/chats: a page of the user's chats, the most
// recently updated first. The page is {"data": [...], "next": cursor}; ?limit=
// and ?cursor= page it.
func (h *Handler) listChats(w http.ResponseWriter, r *http.Request) {
	if h.noStore(w) {
		return
	}
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	limit = min(max(limit, 0), robby.DefaultListLimit)
	cs, next, err := h.opts.Store.List(r.Context(), httpapi.User(r), robby.ListOptions{Limit: limit, Cursor: r.URL.Query().Get("cursor")})
	if err != nil {
		h.refuse(w, r, err)
		return
	}
	out := struct {
		Data []wireChat `json:"data"`
		Next string     `json:"next,omitempty"`
	}{Data: make([]wireChat, len(cs)), Next: next}
	for i, c := range cs {
		out.Data[i] = chatOf(c)
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// getChat answers GET /api/chats/{id}: the chat and its messages, as the
// UI messages useChat takes as its initial messages.
func (h *Handler) getChat(w http.ResponseWriter, r *http.Request) {
	if h.noStore(w) {
		return
	}
	c, msgs, err := h.opts.Store.Load(r.Context(), httpapi.User(r), r.PathValue("id"))
	if err != nil {
		h.refuse(w, r, err)
		return
	}
	out := struct {
		wireChat
		UIMessages []wireMessage `json:"uiMessages"`
	}{chatOf(c), uiMessages(msgs)}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// renameChat answers PATCH /api/chats/{id} {"title": ...}.
func (h *Handler) renameChat(w http.ResponseWriter, r *http.Request) {
	if h.noStore(w) {
		return
	}
	body, ok := httpapi.ReadJSON(w, r, h.opts.MaxRequestBytes)
	if !ok {
		return
	}
	var req struct {
		Title *string `json:"title"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Title == nil {
		httpapi.WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", "",
			`The body must be {"title": "..."}.`)
		return
	}
	user, id := httpapi.User(r), r.PathValue("id")
	if err := h.opts.Store.SetTitle(r.Context(), user, id, strings.TrimSpace(*req.Title)); err != nil {
		h.refuse(w, r, err)
		return
	}
	h.getChat(w, r)
}

// deleteChat answers DELETE /api/chats/{id}.
func (h *Handler) deleteChat(w http.ResponseWriter, r *http.Request) {
	if h.noStore(w) {
		return
	}
	id := r.PathValue("id")
	if err := h.opts.Store.Delete(r.Context(), httpapi.User(r), id); err != nil {
		h.refuse(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
}

// uiMessages returns stored messages as UI messages. Each user message is one.
// The assistant's messages and tool results after it are one, a step an
// assistant message, with its usage in its metadata. An error record ends the
// answer it stopped, in its metadata's "error".
func uiMessages(msgs []robby.Message) []wireMessage {
	out := []wireMessage{}
	var cur *wireMessage // the assistant's message being built
	var usage robby.Usage
	calls := map[string]int{} // call id → index of its part in cur
	var last robby.Message    // the message read last
	end := func() {
		if cur != nil {
			meta, _ := cur.Metadata.(map[string]any)
			meta["usage"] = httpapi.WireUsage(usage)
			out = append(out, *cur)
		}
		cur, usage = nil, robby.Usage{}
		clear(calls)
	}
	for _, m := range msgs {
		seq := strconv.FormatInt(m.Seq, 10)
		var sm chattext.Message
		if m.Chat != nil && json.Unmarshal(m.Chat, &sm) != nil {
			continue
		}
		before := last
		last = m
		if cur != nil && sm.Role == "user" && handedOver(before, m) {
			// A team's handoff: its note to the agent taking over is no
			// question of the user's. The page shows it as the stream did.
			cur.Parts = append(cur.Parts, wirePart{Type: "data-handoff",
				Data: map[string]string{"from": before.Agent, "to": m.Agent, "reason": handoffReason(sm.Text())}})
			continue
		}
		if m.Chat != nil && (sm.Role == "user" || sm.Role == "system" || sm.Role == "developer") {
			end()
			if sm.Role == "user" {
				out = append(out, wireMessage{ID: "m" + seq, Role: "user", Parts: []wirePart{{Type: "text", Text: sm.Text()}}})
			}
			continue
		}
		if cur == nil {
			cur = &wireMessage{ID: "m" + seq, Role: "assistant", Parts: []wirePart{}, Metadata: map[string]any{}}
		}
		usage = usage.Add(m.Usage)
		switch {
		case m.Chat == nil:
			cur.Metadata.(map[string]any)["error"] = stoppedText(m.Error)
		case sm.Role == "assistant":
			addStep(cur, &sm, calls)
			if m.Agent != "" {
				cur.Metadata.(map[string]any)["agent"] = m.Agent // the agent that answered, as the stream's finish says
			}
		case sm.Role == "tool":
			if i, ok := calls[sm.ToolCallID]; ok {
				p := &cur.Parts[i]
				p.State, p.Output = "output-available", mustJSON(sm.Text())
			}
		}
	}
	end()
	return out
}

// handedOver reports whether m, a user message stored after before, is the
// note of a team's handoff: the transfer's results are the handing agent's,
// the note the next one's (robby's handoff.go). A user's own message after a
// tool's result is the same agent's.
func handedOver(before, m robby.Message) bool {
	var prev chattext.Message
	return before.Agent != "" && m.Agent != "" && before.Agent != m.Agent &&
		json.Unmarshal(before.Chat, &prev) == nil && prev.Role == "tool"
}

// handoffReason returns the reason a handoff's note gives: "Agent A handed
// the conversation over to you. Reason: R", then other lines.
func handoffReason(note string) string {
	_, reason, _ := strings.Cut(note, "Reason: ")
	reason, _, _ = strings.Cut(reason, "\n")
	return reason
}

// addStep adds an assistant message's text and calls to cur, as a step.
func addStep(cur *wireMessage, sm *chattext.Message, calls map[string]int) {
	cur.Parts = append(cur.Parts, wirePart{Type: "step-start"})
	if t := sm.Text(); t != "" {
		cur.Parts = append(cur.Parts, wirePart{Type: "text", Text: t, State: "done"})
	}
	for _, c := range sm.ToolCalls {
		calls[c.ID] = len(cur.Parts)
		in, _ := json.Marshal(input(c.Function.Arguments))
		cur.Parts = append(cur.Parts, wirePart{Type: "dynamic-tool", ToolCallID: c.ID, ToolName: c.Function.Name,
			State: "input-available", Input: in})
	}
}

// stoppedText is an error record in words. Only the limits are named:
// other errors can name addresses the user has no business knowing.
func stoppedText(record string) string {
	switch {
	case strings.HasSuffix(record, "context canceled"):
		return "Stopped."
	case strings.Contains(record, robby.ErrBudget.Error()):
		return "Stopped: the budget was reached."
	case strings.Contains(record, robby.ErrMaxTurns.Error()):
		return "Stopped: the turn limit was reached."
	}
	return "The run failed; the server's log has the details."
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
