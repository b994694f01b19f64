package openaiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/chatwire"
	"github.com/robby-go/robby/internal/convstore"
	"github.com/robby-go/robby/internal/httpapi"
	"github.com/robby-go/robby/internal/randid"
)

// A response's ID names the stored conversation that holds it, and where its
// output starts there. It is "resp_" + conversation ID + "_" + the count of
// messages before its output (the history and its input). A response not stored
// has an ID of the same shape that names nothing.
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

// noResponse reports a response that does not exist, was deleted, or is another
// user's. Its message is what the client reads.
type noResponse struct{ msg string }

func (e *noResponse) Error() string { return e.msg }

func notFound(format, id string) error { return &noResponse{fmt.Sprintf(format, id)} }

// createResponse answers POST /v1/responses. The agent the model names runs the
// input, after the previous response's conversation if one is named. The
// response is kept in the store unless the client says not to.
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
	if !h.backgroundServed(w, req) {
		return
	}
	run, err := h.prepare(r.Context(), httpapi.User(r), agent, req)
	if err != nil {
		param := "previous_response_id"
		if req.conversation != "" {
			param = "conversation"
		}
		h.refuse(w, r, err, param)
		return
	}
	if req.background {
		if err := h.create(r.Context(), run, nil).wait(); err != nil { // the client GETs it next
			h.refuse(w, r, err, "")
			return
		}
		h.startBackground(w, r, run)
		return
	}
	h.respond(w, r, req, run)
}

// respond runs a response that is not in the background, and answers with
// it: streamed, or as one object. Its conversation is written meanwhile.
func (h *Handler) respond(w http.ResponseWriter, r *http.Request, req *responsesRequest, run *responseRun) {
	ctx, fail := context.WithCancelCause(r.Context())
	defer fail(nil)
	created := h.create(ctx, run, fail)
	reply := &responsesReply{w: w, resp: run.resp, created: created}
	if run.into != "" {
		defer func() { h.keepOutput(ctx, run, reply.res) }()
	}
	if run.conversation != "" {
		var end func()
		ctx, _, end = h.runs.start(ctx, run.resp.ID) // a new ID: never registered already
		defer end()
		stop := h.heartbeat(ctx, run, created)
		defer func() { stop(); h.record(ctx, run, reply.resp, created) }()
	}
	var res *robby.Result
	var err error
	if req.wire.Stream {
		reply.announce() // the client has the response's ID once stored: to cancel it, to GET it
		err = reply.stream(run.conv.ResumeStream(ctx, run.opts...))
	} else {
		res, err = run.conv.Resume(ctx, run.opts...)
	}
	if cerr := created.wait(); cerr != nil && !reply.started { // nothing written: the store's error
		h.refuse(w, r, cerr, "")
		return
	}
	switch {
	case !req.wire.Stream && (err == nil || limited(err)):
		reply.complete(res, err)
	case err == nil:
	case errors.Is(context.Cause(ctx), errCancelled):
		reply.cancelled()
	case shuttingDown(ctx):
		reply.shutDown()
	case r.Context().Err() != nil:
		reply.resp.Status = "cancelled" // the client went away, and the run with it
	default:
		id := w.Header().Get("X-Request-Id")
		h.opts.Logger.WarnContext(r.Context(), "robby: response failed", slog.String("request_id", id),
			slog.String("model", req.wire.Model), slog.String("response_id", reply.resp.ID), slog.Any("error", err))
		reply.fail(err, id)
	}
	reply.flush() // before the record's write
}

// backgroundServed refuses a background request this server cannot run,
// and reports whether the request may go on.
func (h *Handler) backgroundServed(w http.ResponseWriter, req *responsesRequest) bool {
	switch {
	case !req.background:
		return true
	case req.format != nil && h.opts.Background != nil:
		writeAPIErrorParam(w, http.StatusBadRequest, "invalid_request_error", "unsupported_parameter", "text.format",
			"'text.format' (structured output) is not supported in a background response on a server whose background runs are durable.")
	case req.conversation != "":
		writeAPIErrorParam(w, http.StatusBadRequest, "invalid_request_error", "unsupported_parameter", "conversation",
			"'conversation' is not supported in a background response.")
	case !req.store || h.opts.Store == nil || req.wire.Stream:
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request",
			"'background' needs a response the server keeps (\"store\": true, on a server with a store: robby serve -store), not streamed.")
	default:
		return true
	}
	return false
}

// refuse answers a request that failed before its run. A bad request gets 400,
// a response that is not the user's 404. A store that failed gets 500, and is
// logged.
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

// A responseRun is a response ready to run: the agent's clone and the run's
// options. The clone is bound to the stored conversation, or holds the history.
type responseRun struct {
	conv *robby.Agent
	opts []robby.RunOption
	resp wireResponse // before its output
	// user and conversation name the stored conversation; conversation is
	// empty for a response not kept.
	user, conversation string
	job                BackgroundJob // the run, for a BackgroundRunner
	stored             int64         // the messages of the conversation before the run's
	// into is the conversation of the Conversations API the response runs
	// in, which gets its output when it ends: keepOutput.
	into string
	// write stores the conversation, holding the input: a fork of the
	// previous response's, or a new one. It is nil when it needs none.
	write func(context.Context) error
	// held is the stored conversation and its messages, once written: the
	// run starts from them, without reading them again.
	held     robby.Conversation
	heldMsgs []robby.Message
}

// prepare makes the run of a response. It loads the previous response's
// conversation and checks that the input answers its calls. Unless the response
// is not to be kept, it stores the input in a conversation of its own (a fork
// of the previous one).
func (h *Handler) prepare(ctx context.Context, user string, agent *robby.Agent, req *responsesRequest) (*responseRun, error) {
	raws, input, err := encode(req.input)
	if err != nil {
		return nil, invalid("invalid_request", "Invalid input: %v", err)
	}
	run := &responseRun{resp: newResponse(req), user: user}
	var prev robby.Conversation
	var stored []robby.Message // prev's
	var history []openai.ChatCompletionMessageParamUnion
	switch p := req.wire.PreviousResponseID; {
	case req.conversation != "":
		prev, history, err = h.inConversation(ctx, user, req.conversation)
	case p != nil:
		prev, stored, history, err = h.previous(ctx, user, *p)
	}
	if err != nil {
		return nil, err
	}
	if err := onlyClientCalls(agent, history, input); err != nil {
		return nil, invalid("invalid_request", "%v", err)
	}
	all := append(history, input...)
	if err := callsAnswered(agent, all); err != nil {
		return nil, err
	}
	run.job = BackgroundJob{Agent: req.wire.Model, Messages: all, Agents: agentsOf(stored), CallerTools: req.tools, Params: req.params}
	run.opts = append([]robby.RunOption{robby.WithRunParams(req.params), robby.WithCallerTools(req.tools...)}, req.format...)
	if in := req.wire.Instructions; in != nil && *in != "" {
		run.opts = append(run.opts, robby.WithRunSystem(*in))
		run.job.Instructions = *in
	}
	run.conv = agent.Clone()
	if req.conversation != "" || !req.store || h.opts.Store == nil {
		run.conv.Reset()
		run.conv.AddMessages(all...)
		if req.conversation != "" {
			return run, h.joinConversation(ctx, run, prev, raws)
		}
		run.resp.ID = responsePrefix + randid.Alnum(24)
		return run, nil
	}
	run.resp.Store = true
	msgs := make([]robby.Message, len(raws))
	for i, raw := range raws {
		msgs[i].Chat = raw
	}
	// The conversation is written while the model is asked (run.create):
	// its ID and count are known before.
	c := robby.Conversation{ID: convstore.NewID(), User: user, Title: run.resp.Model, Messages: prev.Messages + int64(len(msgs)),
		Usage: prev.Usage}
	run.stored = c.Messages
	run.conversation, run.resp.ID = c.ID, responseID(c.ID, run.stored)
	run.job.ID = run.resp.ID
	if c.Metadata, err = responseMetadata(run.resp); err != nil {
		return nil, err
	}
	run.held, run.heldMsgs = c, append(stored, msgs...)
	run.write = func(ctx context.Context) error {
		if prev.ID == "" {
			_, err := h.opts.Store.Create(ctx, c, msgs...)
			return err
		}
		_, err := h.opts.Store.Fork(ctx, c, prev.ID, prev.Messages, msgs...)
		return err
	}
	return run, nil
}

// agentsOf returns the agent of each stored message with one for the model
// (robby.Message.Agent), nil when none has one: an agent without a team.
func agentsOf(stored []robby.Message) []string {
	if !slices.ContainsFunc(stored, func(m robby.Message) bool { return m.Agent != "" }) {
		return nil
	}
	agents := make([]string, 0, len(stored))
	for _, m := range stored {
		if m.Chat != nil { // as previous reads them
			agents = append(agents, m.Agent)
		}
	}
	return agents
}

// callsAnswered checks that each call of the client's functions has its output,
// and only it, before anything else is said. OpenAI requires it; otherwise the
// agent would give the model "no result" for them. Calls of the agent's own
// tools left without a result by a crash are the agent's to finish
// ([robby.WithConversation]).
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

// previous loads the conversation of the user's response id: as stored, and
// its chat messages.
func (h *Handler) previous(ctx context.Context, user, id string) (robby.Conversation, []robby.Message, []openai.ChatCompletionMessageParamUnion, error) {
	if h.opts.Store == nil {
		return robby.Conversation{}, nil, nil, invalid("invalid_request",
			"'previous_response_id' needs a server that keeps responses, and this one keeps none (robby serve -store).")
	}
	conv, _, ok := parseResponseID(id)
	if !ok {
		return robby.Conversation{}, nil, nil, notFound("Previous response with id '%s' not found.", id)
	}
	c, stored, err := h.opts.Store.Load(ctx, user, conv)
	if errors.Is(err, robby.ErrNoConversation) {
		return c, nil, nil, notFound("Previous response with id '%s' not found.", id)
	}
	if err != nil {
		return c, nil, nil, err
	}
	history := make([]openai.ChatCompletionMessageParamUnion, 0, len(stored))
	for _, m := range stored {
		if m.Chat == nil {
			continue // the error that ended a run, for people
		}
		msg, err := chatwire.DecodeMessage(m.Chat)
		if err != nil {
			return c, nil, nil, fmt.Errorf("conversation %q, message %d: %w", conv, m.Seq, err)
		}
		history = append(history, msg)
	}
	return c, stored, history, nil
}

// newResponse is the response object of a request, before its run.
func newResponse(req *responsesRequest) wireResponse {
	resp := wireResponse{Object: "response", CreatedAt: time.Now().Unix(), Status: "in_progress",
		Model: req.wire.Model, Instructions: req.wire.Instructions, PreviousResponseID: req.wire.PreviousResponseID,
		Temperature: req.wire.Temperature, TopP: req.wire.TopP, MaxOutputTokens: req.wire.MaxOutputTokens,
		ParallelToolCalls: true, ToolChoice: "auto", Tools: req.wire.Tools, Output: []wireOutputItem{}, Metadata: req.wire.Metadata,
		Background: req.background, Text: req.text}
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
	resp, err := h.stored(r.Context(), httpapi.User(r), id, w.Header().Get("X-Request-Id"))
	if err != nil {
		h.refuse(w, r, err, "")
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, resp)
}

// deleteResponse answers DELETE /v1/responses/{id}. It deletes the user's
// response and its conversation. The responses it continued, or that continued
// it, stay.
func (h *Handler) deleteResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	conv, _, ok := parseResponseID(id)
	err := notFound("Response with id '%s' not found.", id)
	if ok && h.opts.Store != nil {
		if err = h.opts.Store.Delete(r.Context(), httpapi.User(r), conv); errors.Is(err, robby.ErrNoConversation) {
			err = notFound("Response with id '%s' not found.", id)
		}
	}
	if err != nil {
		h.refuse(w, r, err, "")
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, wireDeleted{ID: id, Object: "response", Deleted: true})
}
