package openaiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/chatwire"
	"github.com/robby-go/robby/internal/httpapi"
	"github.com/robby-go/robby/internal/randid"
)

// The Conversations API shows the user's stored conversations: those it
// creates, those of stored responses, those of the chat page. A conversation
// is one robby.Conversation, its items its messages. Messages never change
// once stored. So deleting an item records its ID in the conversation's
// metadata (deletedKey): it is left out of the items, and of what the model
// reads when a response runs in the conversation. The client's metadata
// is the conversation's, but for the keys the endpoint keeps there itself
// (internalPrefix).
const (
	conversationPrefix = "conv_"
	internalPrefix     = "openaiserver."
	deletedKey         = internalPrefix + "deleted" // a JSON array of item IDs
	// OpenAI's bounds on a conversation's metadata and on the items of
	// one request.
	maxMetadataPairs = 16
	maxMetadataKey   = 64
	maxMetadataValue = 512
	maxNewItems      = 20
)

// noStore answers a request for conversations on a server that keeps none.
func (h *Handler) noStore(w http.ResponseWriter) bool {
	if h.opts.Store != nil {
		return false
	}
	writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request",
		"Conversations need a server that keeps them, and this one keeps none (robby serve -store).")
	return true
}

// createConversation answers POST /v1/conversations.
func (h *Handler) createConversation(w http.ResponseWriter, r *http.Request) {
	if h.noStore(w) {
		return
	}
	req, ok := h.readConversationRequest(w, r)
	if !ok {
		return
	}
	md, err := clientMetadata(req.Metadata, nil)
	if err == nil && len(md) == 0 {
		md = nil
	}
	var msgs []robby.Message
	if err == nil && !isNull(req.Items) {
		msgs, err = newItems(req.Items)
	}
	if err != nil {
		h.refuse(w, r, err, "")
		return
	}
	user := httpapi.User(r)
	c, err := h.opts.Store.Create(r.Context(), robby.Conversation{User: user, ID: conversationPrefix + randid.Alnum(24), Metadata: md})
	if err == nil && len(msgs) > 0 {
		err = h.opts.Store.Append(r.Context(), user, c.ID, 0, msgs...)
	}
	if err != nil {
		h.refuse(w, r, err, "")
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, conversationObject(c))
}

// getConversation answers GET /v1/conversations/{id}.
func (h *Handler) getConversation(w http.ResponseWriter, r *http.Request) {
	c, _, err := h.loadConversation(r.Context(), httpapi.User(r), r.PathValue("id"))
	if err != nil {
		h.refuse(w, r, err, "")
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, conversationObject(c))
}

// updateConversation answers POST /v1/conversations/{id}: it replaces the
// client's metadata.
func (h *Handler) updateConversation(w http.ResponseWriter, r *http.Request) {
	req, ok := h.readConversationRequest(w, r)
	if !ok {
		return
	}
	c, _, err := h.loadConversation(r.Context(), httpapi.User(r), r.PathValue("id"))
	if err == nil && isNull(req.Metadata) {
		err = invalid("missing_required_parameter", "'metadata' is required.")
	}
	var md map[string]string
	if err == nil {
		md, err = clientMetadata(req.Metadata, c.Metadata)
	}
	h.setMetadata(w, r, c, md, err)
}

// setMetadata replaces c's metadata with md, unless err, and answers with c.
func (h *Handler) setMetadata(w http.ResponseWriter, r *http.Request, c robby.Conversation, md map[string]string, err error) {
	if err == nil {
		c.Metadata = md
		err = h.opts.Store.SetMetadata(r.Context(), c.User, c.ID, md)
	}
	if err != nil {
		h.refuse(w, r, err, "")
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, conversationObject(c))
}

// readConversationRequest reads the body of a POST of the Conversations
// API, or answers 400 and returns false.
func (h *Handler) readConversationRequest(w http.ResponseWriter, r *http.Request) (wireConversationRequest, bool) {
	var req wireConversationRequest
	body, ok := h.readJSON(w, r)
	if ok && (len(body) == 0 || body[0] != '{' || json.Unmarshal(body, &req) != nil) {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", "The request body must be a JSON object.")
		ok = false
	}
	return req, ok
}

// deleteConversation answers DELETE /v1/conversations/{id}.
func (h *Handler) deleteConversation(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	err := h.storeOrNotFound(id)
	if err == nil {
		err = h.opts.Store.Delete(r.Context(), httpapi.User(r), id)
	}
	if errors.Is(err, robby.ErrNoConversation) {
		err = notFound("Conversation with id '%s' not found.", id)
	}
	if err != nil {
		h.refuse(w, r, err, "")
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, wireConversationDeleted{ID: id, Object: "conversation.deleted", Deleted: true})
}

// listConversationItems answers GET /v1/conversations/{id}/items.
func (h *Handler) listConversationItems(w http.ResponseWriter, r *http.Request) {
	q, ok := listQuery(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	c, msgs, err := h.loadConversation(r.Context(), httpapi.User(r), id)
	if err != nil {
		h.refuse(w, r, err, "")
		return
	}
	page, ok := q.page(h.items(c, msgs))
	if !ok {
		writeAPIErrorParam(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "after",
			fmt.Sprintf("No item with id '%s' in conversation '%s'.", q.after, id))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, page)
}

// addConversationItems answers POST /v1/conversations/{id}/items: it
// appends the items and lists them as stored.
func (h *Handler) addConversationItems(w http.ResponseWriter, r *http.Request) {
	req, ok := h.readConversationRequest(w, r)
	if !ok {
		return
	}
	user, id := httpapi.User(r), r.PathValue("id")
	var msgs []robby.Message
	c, _, err := h.loadConversation(r.Context(), user, id)
	if err == nil {
		if isNull(req.Items) {
			err = invalid("missing_required_parameter", "'items' is required.")
		} else {
			msgs, err = newItems(req.Items)
		}
	}
	var at int64
	if err == nil {
		at, err = h.appendTo(r.Context(), user, id, c.Messages, msgs)
	}
	if err != nil {
		h.refuse(w, r, err, "")
		return
	}
	for i := range msgs {
		msgs[i].Seq = at + int64(i) + 1
	}
	items := h.historyItems(c, msgs)
	page := wireItemList{Object: "list", Data: items}
	if n := len(items); n > 0 {
		page.FirstID, page.LastID = &items[0].ID, &items[n-1].ID
	}
	httpapi.WriteJSON(w, http.StatusOK, page)
}

// getConversationItem answers GET /v1/conversations/{id}/items/{item}.
func (h *Handler) getConversationItem(w http.ResponseWriter, r *http.Request) {
	item, _, err := h.findItem(r.Context(), httpapi.User(r), r.PathValue("id"), r.PathValue("item"))
	if err != nil {
		h.refuse(w, r, err, "")
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, item)
}

// deleteConversationItem answers DELETE /v1/conversations/{id}/items/{item}
// with the conversation.
func (h *Handler) deleteConversationItem(w http.ResponseWriter, r *http.Request) {
	item, c, err := h.findItem(r.Context(), httpapi.User(r), r.PathValue("id"), r.PathValue("item"))
	var md map[string]string
	if err == nil {
		md, err = withDeleted(c.Metadata, item.ID)
	}
	h.setMetadata(w, r, c, md, err)
}

// findItem returns an item of the user's conversation, and the conversation.
func (h *Handler) findItem(ctx context.Context, user, id, itemID string) (wireItem, robby.Conversation, error) {
	c, msgs, err := h.loadConversation(ctx, user, id)
	if err != nil {
		return wireItem{}, c, err
	}
	items := h.items(c, msgs)
	if i := indexOf(items, itemID); i >= 0 {
		return items[i], c, nil
	}
	return wireItem{}, c, notFound("Item with id '%s' not found.", itemID)
}

// storeOrNotFound reports a conversation not found on a server without a
// store.
func (h *Handler) storeOrNotFound(id string) error {
	if h.opts.Store == nil {
		return notFound("Conversation with id '%s' not found.", id)
	}
	return nil
}

// loadConversation loads the user's conversation id.
func (h *Handler) loadConversation(ctx context.Context, user, id string) (robby.Conversation, []robby.Message, error) {
	if err := h.storeOrNotFound(id); err != nil {
		return robby.Conversation{}, nil, err
	}
	c, msgs, err := h.opts.Store.Load(ctx, user, id)
	if errors.Is(err, robby.ErrNoConversation) {
		err = notFound("Conversation with id '%s' not found.", id)
	}
	c.User = user
	return c, msgs, err
}

// appendTo appends msgs to the user's conversation id, which held after
// messages when read. Others may have appended meanwhile: the items then
// go after theirs. It returns how many messages came before msgs.
func (h *Handler) appendTo(ctx context.Context, user, id string, after int64, msgs []robby.Message) (int64, error) {
	for range 8 {
		err := h.opts.Store.Append(ctx, user, id, after, msgs...)
		if !errors.Is(err, robby.ErrConflict) {
			return after, err
		}
		c, _, err := h.opts.Store.Load(ctx, user, id)
		if err != nil {
			return after, err
		}
		after = c.Messages
	}
	return after, fmt.Errorf("conversation %q: %w, again and again", id, robby.ErrConflict)
}

// items are a conversation's items, oldest first, without those deleted.
func (h *Handler) items(c robby.Conversation, msgs []robby.Message) []wireItem {
	deleted := deletedItems(c.Metadata)
	return slices.DeleteFunc(h.historyItems(c, msgs), func(it wireItem) bool { return deleted[it.ID] })
}

// newItems reads the items of a request, input items as a response takes
// them, into the messages to store.
func newItems(raw json.RawMessage) ([]robby.Message, error) {
	if raw[0] != '[' {
		return nil, invalid("invalid_request", "'items' must be an array.")
	}
	if len(bytes.TrimSpace(raw[1:len(raw)-1])) == 0 {
		return nil, nil // none: a conversation may start empty
	}
	chat, err := decodeInput(raw, maxNewItems)
	if err != nil {
		var bad *badRequest
		if errors.As(err, &bad) {
			bad.msg = strings.ReplaceAll(bad.msg, "'input'", "'items'")
			bad.msg = strings.ReplaceAll(bad.msg, "input[", "items[")
		}
		return nil, err
	}
	raws, _, err := encode(chat)
	if err != nil {
		return nil, invalid("invalid_request", "Invalid items: %v", err)
	}
	msgs := make([]robby.Message, len(raws))
	for i, m := range raws {
		msgs[i].Chat = m
	}
	return msgs, nil
}

// conversationObject is c as the Conversations API shows it: its
// metadata is the client's.
func conversationObject(c robby.Conversation) wireConversation {
	md := map[string]string{}
	for k, v := range c.Metadata {
		if !strings.HasPrefix(k, internalPrefix) {
			md[k] = v
		}
	}
	return wireConversation{ID: c.ID, Object: "conversation", CreatedAt: c.Created.Unix(), Metadata: md}
}

// clientMetadata reads the client's metadata, within OpenAI's bounds. It
// returns it with the endpoint's own keys of old.
func clientMetadata(raw json.RawMessage, old map[string]string) (map[string]string, error) {
	var md map[string]string
	if !isNull(raw) && (raw[0] != '{' || json.Unmarshal(raw, &md) != nil) {
		return nil, invalid("invalid_request", "'metadata' must be an object of strings.")
	}
	if len(md) > maxMetadataPairs {
		return nil, invalid("invalid_request", "'metadata' holds %d keys; at most %d are allowed.", len(md), maxMetadataPairs)
	}
	for k, v := range md {
		switch {
		case utf8.RuneCountInString(k) > maxMetadataKey || utf8.RuneCountInString(v) > maxMetadataValue:
			return nil, invalid("invalid_request", "'metadata' keys are at most %d characters, values %d.", maxMetadataKey, maxMetadataValue)
		case strings.HasPrefix(k, internalPrefix):
			return nil, invalid("invalid_request", "'metadata' keys starting with %q are the server's own.", internalPrefix)
		}
	}
	if md == nil {
		md = map[string]string{}
	}
	for k, v := range old {
		if strings.HasPrefix(k, internalPrefix) {
			md[k] = v
		}
	}
	return md, nil
}

// deletedItems are the IDs of the items deleted from a conversation.
func deletedItems(md map[string]string) map[string]bool {
	var ids []string
	if json.Unmarshal([]byte(md[deletedKey]), &ids) != nil {
		return nil
	}
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set
}

// withDeleted returns md recording item id deleted too.
func withDeleted(md map[string]string, id string) (map[string]string, error) {
	ids := slices.Sorted(maps.Keys(deletedItems(md)))
	b, err := json.Marshal(append(ids, id))
	if err != nil {
		return nil, err
	}
	md = maps.Clone(md)
	if md == nil {
		md = map[string]string{}
	}
	md[deletedKey] = string(b)
	return md, nil
}

// inConversation loads the user's conversation id for a response to run
// in, and the history the model reads of it: the messages but the items
// deleted and the errors kept for people.
func (h *Handler) inConversation(ctx context.Context, user, id string) (robby.Conversation, []openai.ChatCompletionMessageParamUnion, error) {
	if h.opts.Store == nil {
		return robby.Conversation{}, nil, invalid("invalid_request",
			"'conversation' needs a server that keeps conversations, and this one keeps none (robby serve -store).")
	}
	c, msgs, err := h.loadConversation(ctx, user, id)
	if err != nil {
		return c, nil, err
	}
	raws, err := modelHistory(c, msgs)
	if err != nil {
		return c, nil, err
	}
	history := make([]openai.ChatCompletionMessageParamUnion, len(raws))
	for i, raw := range raws {
		if history[i], err = chatwire.DecodeMessage(raw); err != nil {
			return c, nil, fmt.Errorf("conversation %q: %w", id, err)
		}
	}
	return c, history, nil
}

// modelHistory returns the messages of a conversation as the model reads
// them. A deleted message is left out. A deleted call is left out with its
// output, and a deleted output with its call, so every call keeps its result.
func modelHistory(c robby.Conversation, msgs []robby.Message) ([]json.RawMessage, error) {
	deleted := deletedItems(c.Metadata)
	dropped := map[string]bool{} // the call IDs left out
	for _, m := range msgs {
		var sm storedMessage
		if len(deleted) > 0 && m.Chat != nil && json.Unmarshal(m.Chat, &sm) == nil && sm.Role == "tool" &&
			deleted[fmt.Sprintf("fco_%s_%d", c.ID, m.Seq)] {
			dropped[sm.ToolCallID] = true
		}
	}
	out := make([]json.RawMessage, 0, len(msgs))
	for _, m := range msgs {
		if m.Chat == nil {
			continue
		}
		if len(deleted) == 0 {
			out = append(out, m.Chat)
			continue
		}
		raw, err := keptPart(c.ID, m, deleted, dropped)
		if err != nil {
			return nil, err
		}
		if raw != nil {
			out = append(out, raw)
		}
	}
	return out, nil
}

// keptPart returns what the model reads of a stored message, nil for
// nothing.
func keptPart(conv string, m robby.Message, deleted, dropped map[string]bool) (json.RawMessage, error) {
	var sm storedMessage
	if err := json.Unmarshal(m.Chat, &sm); err != nil {
		return nil, fmt.Errorf("conversation %q, message %d: %w", conv, m.Seq, err)
	}
	id := fmt.Sprintf("%s_%d", conv, m.Seq)
	switch sm.Role {
	case "tool":
		if dropped[sm.ToolCallID] {
			return nil, nil
		}
		return m.Chat, nil
	case "assistant":
	default:
		if deleted["msg_"+id] {
			return nil, nil
		}
		return m.Chat, nil
	}
	calls := slices.DeleteFunc(slices.Clone(sm.ToolCalls), func(tc wireToolCall) bool { return dropped[tc.ID] })
	for j, tc := range sm.ToolCalls {
		if deleted[fmt.Sprintf("fc_%s_%d", id, j)] {
			dropped[tc.ID] = true
			calls = slices.DeleteFunc(calls, func(k wireToolCall) bool { return k.ID == tc.ID })
		}
	}
	if !deleted["msg_"+id] && len(calls) == len(sm.ToolCalls) {
		return m.Chat, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(m.Chat, &fields); err != nil {
		return nil, err
	}
	if deleted["msg_"+id] {
		delete(fields, "content")
	}
	delete(fields, "tool_calls")
	if len(calls) > 0 {
		b, err := json.Marshal(calls)
		if err != nil {
			return nil, err
		}
		fields["tool_calls"] = b
	}
	if _, ok := fields["content"]; !ok && len(calls) == 0 {
		return nil, nil
	}
	return json.Marshal(fields)
}

// joinConversation appends a response's input to the conversation it runs
// in, titled with the model if it has no title. The run itself is not
// bound to the store: the model reads the history without the deleted items.
// keepOutput appends its output once it ends.
func (h *Handler) joinConversation(ctx context.Context, run *responseRun, c robby.Conversation, raws []json.RawMessage) error {
	msgs := make([]robby.Message, len(raws))
	for i, raw := range raws {
		msgs[i].Chat = raw
	}
	at, err := h.appendTo(ctx, run.user, c.ID, c.Messages, msgs)
	if err == nil && c.Title == "" {
		err = h.opts.Store.SetTitle(ctx, run.user, c.ID, run.resp.Model)
	}
	if err != nil {
		return err
	}
	run.into, run.stored = c.ID, at+int64(len(msgs))
	run.resp.ID = responsePrefix + randid.Alnum(24)
	run.resp.Conversation = &wireConversationRef{ID: c.ID}
	return nil
}

// keepOutput appends to the conversation a response ran in what its run
// said. It runs even when the client went away; a failure is logged.
func (h *Handler) keepOutput(ctx context.Context, run *responseRun, res *robby.Result) {
	if res == nil || len(res.Messages) == 0 {
		return
	}
	msgs := make([]robby.Message, 0, len(res.Messages))
	for _, m := range res.Messages {
		if raw, err := m.MarshalJSON(); err == nil {
			msgs = append(msgs, robby.Message{Chat: raw})
		}
	}
	if len(msgs) == 0 {
		return
	}
	msgs[len(msgs)-1].Usage = res.Usage
	if _, err := h.appendTo(context.WithoutCancel(ctx), run.user, run.into, run.stored, msgs); err != nil {
		h.opts.Logger.ErrorContext(ctx, "robby: response output not kept in its conversation", slog.String("response_id", run.resp.ID),
			slog.String("conversation", run.into), slog.Any("error", err))
	}
}
