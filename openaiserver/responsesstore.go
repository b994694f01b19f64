package openaiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// A creation is the write of a response's conversation (responseRun.write).
// It goes on while the run asks the model: the model's first tokens need not
// wait for the store. Nothing names the response to the client before it
// ends ([responsesReply.announce]), and no other write to the conversation
// starts before.
type creation struct {
	done chan struct{}
	err  error // once done
}

// create starts writing run's conversation, and has the run start from it.
// A write that fails cancels the run's context with its error (fail, if not
// nil). create returns nil when the run writes nothing.
func (h *Handler) create(ctx context.Context, run *responseRun, fail context.CancelCauseFunc) *creation {
	if run.write == nil {
		return nil
	}
	c := &creation{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		if c.err = run.write(ctx); c.err != nil && fail != nil {
			fail(c.err)
		}
	}()
	store := afterCreation{Store: h.opts.Store, c: c}
	run.opts = append(run.opts, robby.WithStoredConversation(store, run.held, run.heldMsgs))
	return c
}

// wait waits for the write to end, and returns its error.
func (c *creation) wait() error {
	if c == nil {
		return nil
	}
	<-c.done
	return c.err
}

// afterCreation is the store of a run whose conversation is being written:
// the run's saves wait for the write, and fail with its error.
type afterCreation struct {
	robby.Store
	c *creation
}

func (s afterCreation) Append(ctx context.Context, user, id string, after int64, msgs ...robby.Message) error {
	select {
	case <-s.c.done:
	case <-ctx.Done():
		return fmt.Errorf("waiting for the conversation to be stored: %w", context.Cause(ctx))
	}
	if s.c.err != nil {
		return fmt.Errorf("storing the conversation: %w", s.c.err)
	}
	return s.Store.Append(ctx, user, id, after, msgs...)
}

// record keeps a stored response as its run ended: its status, usage and error.
// It runs even when the client went away. A failure is logged, as the client
// has its answer already.
func (h *Handler) record(ctx context.Context, run *responseRun, resp wireResponse, created *creation) {
	if run.conversation == "" || created.wait() != nil {
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
// Options.Heartbeat once its conversation was created, marking it updated. It
// goes on until stop. stop returns once no write is under way, so none lands
// after the record of the run's end.
func (h *Handler) heartbeat(ctx context.Context, run *responseRun, created *creation) (stop func()) {
	md, err := responseMetadata(run.resp)
	if err != nil {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		if created != nil {
			select {
			case <-created.done:
			case <-done:
				return
			}
			if created.err != nil {
				return
			}
		}
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
