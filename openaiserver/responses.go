package openaiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/randid"
)

// A response's ID names the stored conversation that holds it and where
// its output starts there: "resp_" + conversation ID + "_" + the count of
// messages before its output (the history and its input). A response not
// stored has an ID of the same shape that names nothing.
const responsePrefix = "resp_"

func responseID(conversation string, start int64) string {
	return responsePrefix + conversation + "_" + strconv.FormatInt(start, 10)
}

// parseResponseID returns the conversation and start a response ID names.
func parseResponseID(id string) (conversation string, start int64, ok bool) {
	rest, ok := strings.CutPrefix(id, responsePrefix)
	i := strings.LastIndexByte(rest, '_')
	if !ok || i <= 0 {
		return "", 0, false
	}
	start, err := strconv.ParseInt(rest[i+1:], 10, 64)
	return rest[:i], start, err == nil && start >= 0
}

// noResponse reports a response that does not exist, was deleted, or
// belongs to another user, in the words the client reads.
type noResponse struct{ msg string }

func (e *noResponse) Error() string { return e.msg }

func notFound(format, id string) error { return &noResponse{fmt.Sprintf(format, id)} }

// createResponse answers POST /v1/responses: the input run by the agent
// the model names, after the conversation of the previous response if one
// is named, kept in the store unless the client says not to.
func (h *Handler) createResponse(w http.ResponseWriter, r *http.Request) {
	body, ok := h.readJSON(w, r)
	if !ok {
		return
	}
	req, err := decodeResponsesRequest(body, h.opts.MaxMessages)
	var bad *badRequest
	if errors.As(err, &bad) {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", bad.code, bad.msg)
		return
	}
	agent, r := h.agent(w, r, req.wire.Model)
	if agent == nil {
		return
	}
	if err := clientTools(agent, req.tools); err != nil {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", err.Error())
		return
	}
	run, err := h.prepare(r.Context(), userOf(r), agent, req)
	if err != nil {
		h.refuse(w, r, err, "previous_response_id")
		return
	}
	reply := &responsesReply{w: w, resp: run.response(req)}
	if req.wire.Stream {
		err = reply.stream(run.conv.ResumeStream(r.Context(), run.opts...))
	} else {
		var res *robby.Result
		res, err = run.conv.Resume(r.Context(), run.opts...)
		if err == nil || errors.Is(err, robby.ErrMaxTurns) {
			reply.complete(res, err)
			return
		}
	}
	if err != nil && r.Context().Err() == nil {
		id := w.Header().Get("X-Request-Id")
		h.opts.Logger.WarnContext(r.Context(), "robby: response failed", slog.String("request_id", id),
			slog.String("model", req.wire.Model), slog.String("response_id", reply.resp.ID), slog.Any("error", err))
		reply.fail(err, id)
	}
}

// refuse answers a request that failed before its run: 400 for a bad
// request, 404 for a response that is not the user's, 500 (logged) for a
// store that failed.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, err error, param string) {
	var bad *badRequest
	var none *noResponse
	switch {
	case errors.As(err, &bad):
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", bad.code, bad.msg)
	case errors.As(err, &none):
		writeAPIErrorParam(w, http.StatusNotFound, "invalid_request_error", "not_found", param, none.msg)
	default:
		id := w.Header().Get("X-Request-Id")
		h.opts.Logger.ErrorContext(r.Context(), "robby: response store failed", slog.String("request_id", id), slog.Any("error", err))
		writeAPIError(w, http.StatusInternalServerError, "server_error", "",
			fmt.Sprintf("The server could not reach its store of responses (request id %s); the server's log has the details.", id))
	}
}

// A responseRun is a response ready to run: the agent's clone, bound to
// the stored conversation or holding the history, and the run's options.
type responseRun struct {
	conv     *robby.Agent
	opts     []robby.RunOption
	id       string
	stored   bool
	previous *string
	created  time.Time
}

// prepare makes the run of a response: loads the previous response's
// conversation, checks that the input answers its calls, and stores the
// input in a conversation of the response's own (the previous one's
// forked) unless the response is not to be kept.
func (h *Handler) prepare(ctx context.Context, user string, agent *robby.Agent, req *responsesRequest) (*responseRun, error) {
	raws, input, err := encode(req.input)
	if err != nil {
		return nil, invalid("invalid_request", "Invalid input: %v", err)
	}
	run := &responseRun{previous: req.wire.PreviousResponseID, created: time.Now()}
	var prev robby.Conversation
	var history []openai.ChatCompletionMessageParamUnion
	if run.previous != nil {
		if prev, history, err = h.previous(ctx, user, *run.previous); err != nil {
			return nil, err
		}
	}
	all := append(history, input...)
	if err := callsAnswered(agent, all); err != nil {
		return nil, err
	}
	run.opts = []robby.RunOption{robby.WithRunParams(req.params), robby.WithCallerTools(req.tools...)}
	if in := req.wire.Instructions; in != nil && *in != "" {
		run.opts = append(run.opts, robby.WithRunSystem(*in))
	}
	run.conv = agent.Clone()
	if !req.store || h.opts.Store == nil {
		run.conv.Reset()
		run.conv.AddMessages(all...)
		run.id = responsePrefix + randid.Alnum(24)
		return run, nil
	}
	c, err := h.conversation(ctx, user, prev, req.wire.Model)
	if err != nil {
		return nil, err
	}
	msgs := make([]robby.Message, len(raws))
	for i, raw := range raws {
		msgs[i].Chat = raw
	}
	if err := h.opts.Store.Append(ctx, user, c.ID, c.Messages, msgs...); err != nil {
		return nil, err
	}
	run.stored, run.id = true, responseID(c.ID, c.Messages+int64(len(msgs)))
	run.opts = append(run.opts, robby.WithConversation(h.opts.Store, user, c.ID))
	return run, nil
}

// callsAnswered checks that each call of the client's functions has its
// output, and only it, before anything else is said, as OpenAI requires,
// rather than have the agent give the model "no result" for them. Calls
// of the agent's own tools that a crash left without a result are the
// agent's to finish ([robby.WithConversation]).
func callsAnswered(agent *robby.Agent, msgs []openai.ChatCompletionMessageParamUnion) error {
	own := map[string]bool{}
	for _, t := range agent.Tools() {
		own[t.Name()] = true
	}
	open := map[string]bool{} // call ID → a call of the client's
	for _, m := range msgs {
		if m.OfTool != nil {
			if _, ok := open[m.OfTool.ToolCallID]; !ok {
				return invalid("invalid_request", "No tool call found for function call output with call_id %s.", m.OfTool.ToolCallID)
			}
			delete(open, m.OfTool.ToolCallID)
			continue
		}
		if err := noneOpen(open); err != nil {
			return err
		}
		clear(open)
		if m.OfAssistant != nil {
			for _, c := range m.OfAssistant.ToolCalls {
				if f := c.OfFunction; f != nil {
					open[f.ID] = !own[f.Function.Name]
				}
			}
		}
	}
	return noneOpen(open)
}

// noneOpen reports a call of the client's among open.
func noneOpen(open map[string]bool) error {
	for id, client := range open {
		if client {
			return invalid("invalid_request", "No tool output found for function call %s.", id)
		}
	}
	return nil
}

// previous loads the conversation of the user's response id.
func (h *Handler) previous(ctx context.Context, user, id string) (robby.Conversation, []openai.ChatCompletionMessageParamUnion, error) {
	if h.opts.Store == nil {
		return robby.Conversation{}, nil, invalid("invalid_request",
			"'previous_response_id' needs a server that keeps responses, and this one keeps none (robby serve -store).")
	}
	conv, _, ok := parseResponseID(id)
	if !ok {
		return robby.Conversation{}, nil, notFound("Previous response with id '%s' not found.", id)
	}
	c, stored, err := h.opts.Store.Load(ctx, user, conv)
	if errors.Is(err, robby.ErrNoConversation) {
		return c, nil, notFound("Previous response with id '%s' not found.", id)
	}
	if err != nil {
		return c, nil, err
	}
	history := make([]openai.ChatCompletionMessageParamUnion, 0, len(stored))
	for _, m := range stored {
		if m.Chat == nil {
			continue // the error that ended a run, for people
		}
		var msg openai.ChatCompletionMessageParamUnion
		if err := msg.UnmarshalJSON(m.Chat); err != nil {
			return c, nil, fmt.Errorf("conversation %q, message %d: %w", conv, m.Seq, err)
		}
		history = append(history, msg)
	}
	return c, history, nil
}

// conversation stores the conversation of a new response: a copy of the
// previous response's, or a new one, titled with the model that answers.
func (h *Handler) conversation(ctx context.Context, user string, prev robby.Conversation, model string) (robby.Conversation, error) {
	if prev.ID == "" {
		return h.opts.Store.Create(ctx, robby.Conversation{User: user, Title: model})
	}
	c, err := h.opts.Store.Fork(ctx, user, prev.ID, prev.Messages)
	if err == nil && c.Title != model {
		c.Title = model
		err = h.opts.Store.SetTitle(ctx, user, c.ID, model)
	}
	return c, err
}

// response is the response object of a run, before its output.
func (run *responseRun) response(req *responsesRequest) wireResponse {
	resp := wireResponse{ID: run.id, Object: "response", CreatedAt: run.created.Unix(), Status: "in_progress",
		Model: req.wire.Model, Instructions: req.wire.Instructions, PreviousResponseID: run.previous,
		Store: run.stored, Temperature: req.wire.Temperature, TopP: req.wire.TopP, MaxOutputTokens: req.wire.MaxOutputTokens,
		ParallelToolCalls: true, ToolChoice: "auto", Tools: req.wire.Tools, Output: []wireOutputItem{}, Metadata: req.wire.Metadata}
	if resp.Tools == nil {
		resp.Tools = []wireTool{}
	}
	if p := req.wire.ParallelToolCalls; p != nil {
		resp.ParallelToolCalls = *p
	}
	return resp
}

// getResponse answers GET /v1/responses/{id} with a stored response of
// the user's.
func (h *Handler) getResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	resp, err := h.stored(r.Context(), userOf(r), id)
	if err != nil {
		h.refuse(w, r, err, "")
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// stored reads a stored response back: its output, the messages of its
// conversation after its input.
func (h *Handler) stored(ctx context.Context, user, id string) (wireResponse, error) {
	conv, start, ok := parseResponseID(id)
	if !ok || h.opts.Store == nil {
		return wireResponse{}, notFound("Response with id '%s' not found.", id)
	}
	c, msgs, err := h.opts.Store.Load(ctx, user, conv)
	if errors.Is(err, robby.ErrNoConversation) || err == nil && start > int64(len(msgs)) {
		return wireResponse{}, notFound("Response with id '%s' not found.", id)
	}
	if err != nil {
		return wireResponse{}, err
	}
	resp := wireResponse{ID: id, Object: "response", CreatedAt: c.Created.Unix(), Status: "completed", Model: c.Title,
		Store: true, ParallelToolCalls: true, ToolChoice: "auto", Tools: []wireTool{}}
	var own []json.RawMessage
	for _, m := range msgs[start:] {
		if m.Chat == nil {
			resp.Status, resp.Error = "failed", &wireResponseError{Code: "server_error",
				Message: "The agent could not finish this response."}
			continue
		}
		own = append(own, m.Chat)
	}
	resp.Output = outputItems(id, own)
	return resp, nil
}

// deleteResponse answers DELETE /v1/responses/{id}: the user's response
// and its conversation are deleted; the responses it continued, or that
// continued it, are not.
func (h *Handler) deleteResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	conv, _, ok := parseResponseID(id)
	err := notFound("Response with id '%s' not found.", id)
	if ok && h.opts.Store != nil {
		if err = h.opts.Store.Delete(r.Context(), userOf(r), conv); errors.Is(err, robby.ErrNoConversation) {
			err = notFound("Response with id '%s' not found.", id)
		}
	}
	if err != nil {
		h.refuse(w, r, err, "")
		return
	}
	writeJSON(w, http.StatusOK, wireDeleted{ID: id, Object: "response", Deleted: true})
}
