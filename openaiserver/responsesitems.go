package openaiserver

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/chattext"
	"github.com/robby-go/robby/internal/httpapi"
)

// Input items are the messages of a stored response's conversation before its
// output. They are what earlier responses said and the response's own input.
// OpenAI lists them newest first unless asked otherwise, 20 a page (at most
// 100), after an item's ID.
const (
	defaultItemsLimit = 20
	maxItemsLimit     = 100
)

// inputItems answers GET /v1/responses/{id}/input_items.
func (h *Handler) inputItems(w http.ResponseWriter, r *http.Request) {
	q, ok := listQuery(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	c, msgs, start, err := h.load(r.Context(), httpapi.User(r), id)
	if err != nil {
		h.refuse(w, r, err, "")
		return
	}
	page, ok := q.page(h.historyItems(c, msgs[:start]))
	if !ok {
		writeAPIErrorParam(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "after",
			fmt.Sprintf("No input item with id '%s' in response '%s'.", q.after, id))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, page)
}

// itemsQuery is how a client pages a list of items: OpenAI's after, limit
// and order.
type itemsQuery struct {
	after string
	limit int
	asc   bool
}

// listQuery reads r's paging parameters, or answers 400 and returns false.
func listQuery(w http.ResponseWriter, r *http.Request) (itemsQuery, bool) {
	q := r.URL.Query()
	lq := itemsQuery{after: q.Get("after"), limit: defaultItemsLimit}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxItemsLimit {
			writeAPIErrorParam(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "limit",
				fmt.Sprintf("Invalid 'limit': expected an integer from 1 to %d, got %q.", maxItemsLimit, s))
			return lq, false
		}
		lq.limit = n
	}
	switch order := q.Get("order"); order {
	case "asc":
		lq.asc = true
	case "", "desc":
	default:
		writeAPIErrorParam(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "order",
			fmt.Sprintf("Invalid 'order': expected 'asc' or 'desc', got %q.", order))
		return lq, false
	}
	return lq, true
}

// page returns the page of items (given oldest first) that q asks for.
// It returns false when no item has q's after.
func (q itemsQuery) page(items []wireItem) (wireItemList, bool) {
	if !q.asc {
		slices.Reverse(items)
	}
	if q.after != "" {
		i := indexOf(items, q.after)
		if i < 0 {
			return wireItemList{}, false
		}
		items = items[i+1:]
	}
	page := wireItemList{Object: "list", Data: items[:min(q.limit, len(items))], HasMore: len(items) > q.limit}
	if n := len(page.Data); n > 0 {
		page.FirstID, page.LastID = &page.Data[0].ID, &page.Data[n-1].ID
	}
	return page, true
}

func indexOf(items []wireItem, id string) int {
	for i, it := range items {
		if it.ID == id {
			return i
		}
	}
	return -1
}

// historyItems turns stored messages into input items, oldest first. It leaves
// out what a response's output leaves out too. That is the calls of the agent's
// own tools, their results, and the errors kept for people.
func (h *Handler) historyItems(c robby.Conversation, msgs []robby.Message) []wireItem {
	own := map[string]bool{}
	if a, ok := h.agents[c.Title]; ok {
		for _, t := range a.Tools() {
			own[t.Name()] = true
		}
	}
	hidden := map[string]bool{} // the call IDs of the agent's own tools
	items := []wireItem{}
	for _, stored := range msgs {
		var m storedMessage
		if stored.Chat == nil || json.Unmarshal(stored.Chat, &m) != nil {
			continue
		}
		id := fmt.Sprintf("%s_%d", c.ID, stored.Seq)
		switch m.Role {
		case "tool":
			if !hidden[m.ToolCallID] {
				out := chattext.Content(m.Content)
				items = append(items, wireItem{ID: "fco_" + id, Type: "function_call_output", Status: "completed",
					CallID: m.ToolCallID, Output: &out})
			}
		case "assistant":
			if t := chattext.Content(m.Content); t != "" {
				items = append(items, wireItem{ID: "msg_" + id, Type: "message", Status: "completed", Role: "assistant",
					Content: []wireItemPart{{Type: "output_text", Text: t, Annotations: []any{}, Logprobs: []any{}}}})
			}
			for j, call := range m.ToolCalls {
				if own[call.Function.Name] {
					hidden[call.ID] = true
					continue
				}
				args := call.Function.Arguments
				items = append(items, wireItem{ID: fmt.Sprintf("fc_%s_%d", id, j), Type: "function_call", Status: "completed",
					CallID: call.ID, Name: call.Function.Name, Arguments: &args})
			}
		default:
			items = append(items, wireItem{ID: "msg_" + id, Type: "message", Status: "completed", Role: m.Role,
				Content: inputParts(m.Content)})
		}
	}
	return items
}

// inputParts turns a stored message's content (a string, or text and
// image parts) back into the parts of an input message.
func inputParts(content json.RawMessage) []wireItemPart {
	var parts []chatPart
	if json.Unmarshal(content, &parts) != nil {
		return []wireItemPart{{Type: "input_text", Text: chattext.Content(content)}}
	}
	out := make([]wireItemPart, 0, len(parts))
	for _, p := range parts {
		if p.ImageURL != nil {
			out = append(out, wireItemPart{Type: "input_image", ImageURL: p.ImageURL.URL,
				Detail: cmp.Or(p.ImageURL.Detail, "auto")})
			continue
		}
		out = append(out, wireItemPart{Type: "input_text", Text: p.Text})
	}
	return out
}
