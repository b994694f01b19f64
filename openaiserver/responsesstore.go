package openaiserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/robby-go/robby"
)

// metadataKey holds a stored response in its conversation's metadata, as JSON.
// It is the response object without its output, which the messages hold: its
// status, parameters and usage. A completed structured answer keeps its
// output: the messages hold the answers repaired before it too.
const metadataKey = "openaiserver.response"

// responseMetadata returns the conversation metadata recording resp.
func responseMetadata(resp wireResponse) (map[string]string, error) {
	if !resp.Text.structured() || resp.Status != "completed" {
		resp.Output = nil // a structured answer is kept: the messages hold its repairs too
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return nil, err
	}
	return map[string]string{metadataKey: string(b)}, nil
}

// record keeps a stored response as its run ended: its status, usage and error.
// It runs even when the client went away. A failure is logged, as the client
// has its answer already.
func (h *Handler) record(ctx context.Context, run *responseRun, resp wireResponse) {
	if run.conversation == "" {
		return
	}
	md, err := responseMetadata(resp)
	if err == nil {
		err = h.opts.Store.SetMetadata(context.WithoutCancel(ctx), run.user, run.conversation, md)
	}
	if err != nil {
		h.opts.Logger.ErrorContext(ctx, "robby: response not recorded", slog.String("response_id", resp.ID),
			slog.Any("error", err))
	}
}

// heartbeat writes the record of a stored response as it started, every
// Options.Heartbeat, marking its conversation updated. It goes on until stop.
// stop returns once no write is under way, so none lands after the record of
// the run's end.
func (h *Handler) heartbeat(ctx context.Context, run *responseRun) (stop func()) {
	md, err := responseMetadata(run.resp)
	if err != nil {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(h.opts.Heartbeat)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.opts.Heartbeat)
			err := h.opts.Store.SetMetadata(wctx, run.user, run.conversation, md)
			cancel()
			if err != nil {
				h.opts.Logger.WarnContext(ctx, "robby: response heartbeat not stored", slog.String("response_id", run.resp.ID),
					slog.Any("error", err))
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// stale reports whether a response recorded "in_progress" in conversation c has
// stopped. It has, when it does not run here and c had no write for three
// heartbeats.
func (h *Handler) stale(c robby.Conversation, id string) bool {
	return h.runs.get(id) == nil && time.Since(c.Updated) > 3*h.opts.Heartbeat
}

// stored reads a stored response back. Its conversation's metadata records the
// response object. Its output is the conversation's messages after its input. A
// response is "in_progress" until its run ends. It is "failed" once its
// heartbeats stopped without an end recorded. But a background response run by
// [Options.Background] goes on without its replica. This one takes it over
// ([Handler.adopt]), and it reads "in_progress" until the run ends.
func (h *Handler) stored(ctx context.Context, user, id, requestID string) (wireResponse, error) {
	c, msgs, start, err := h.load(ctx, user, id)
	if err != nil {
		return wireResponse{}, err
	}
	resp := wireResponse{Object: "response", CreatedAt: c.Created.Unix(), Status: "completed", Model: c.Title,
		ParallelToolCalls: true, ToolChoice: "auto", Tools: []wireTool{}}
	rec, recorded := c.Metadata[metadataKey]
	if recorded {
		if err := json.Unmarshal([]byte(rec), &resp); err != nil {
			return wireResponse{}, err
		}
	}
	resp.ID, resp.Store = id, true
	if resp.Text.Format == nil { // recorded before text was
		resp.Text = plainText
	}
	if resp.Status == "in_progress" && h.stale(c, id) {
		if resp.Background && h.opts.Background != nil {
			h.adopt(ctx, user, resp, requestID)
		} else {
			resp.Status, resp.Error = "failed", &wireResponseError{Code: "server_error",
				Message: "The server running this response stopped before it ended."}
		}
	}
	var own []json.RawMessage
	var agents []string
	for _, m := range msgs[start:] {
		if m.Chat == nil {
			if !recorded { // a response stored before records were kept
				resp.Status, resp.Error = "failed", &wireResponseError{Code: "server_error",
					Message: "The agent could not finish this response."}
			}
			continue
		}
		own, agents = append(own, m.Chat), append(agents, m.Agent)
	}
	if len(resp.Output) == 0 {
		resp.Output = outputItems(id, own, agents)
	}
	return resp, nil
}

// load returns the conversation of the user's stored response id, and its
// messages. It also returns where the response's output starts among them.
func (h *Handler) load(ctx context.Context, user, id string) (robby.Conversation, []robby.Message, int64, error) {
	conv, start, ok := parseResponseID(id)
	if !ok || h.opts.Store == nil {
		return robby.Conversation{}, nil, 0, notFound("Response with id '%s' not found.", id)
	}
	c, msgs, err := h.opts.Store.Load(ctx, user, conv)
	if errors.Is(err, robby.ErrNoConversation) || err == nil && start > int64(len(msgs)) {
		return robby.Conversation{}, nil, 0, notFound("Response with id '%s' not found.", id)
	}
	return c, msgs, start, err
}
