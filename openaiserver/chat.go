package openaiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/randid"
)

// chatCompletions answers POST /v1/chat/completions: the client's
// conversation, run by the agent its model names.
func (h *Handler) chatCompletions(w http.ResponseWriter, r *http.Request) {
	body, ok := h.readJSON(w, r)
	if !ok {
		return
	}
	req, err := decodeChatRequest(body, h.opts.MaxMessages)
	var bad *badRequest
	if errors.As(err, &bad) {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", bad.code, bad.msg)
		return
	}
	agent, r := h.agent(w, r, req.model)
	if agent == nil {
		return
	}
	conv, opts, err := conversation(agent, req)
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", err.Error())
		return
	}
	reply := &chatReply{w: w, model: req.model, id: "chatcmpl-" + randid.Alnum(24), created: time.Now().Unix(),
		usage: req.includeUsage, steps: h.opts.ShowToolSteps}
	if req.stream {
		err = reply.stream(conv.ResumeStream(r.Context(), opts...))
	} else {
		var res *robby.Result
		res, err = conv.Resume(r.Context(), opts...)
		if err == nil || limited(err) {
			reply.complete(res, err)
			return
		}
	}
	if err != nil && shuttingDown(r.Context()) {
		reply.shutDown()
		return
	}
	if err != nil && r.Context().Err() == nil {
		id := w.Header().Get("X-Request-Id")
		h.opts.Logger.WarnContext(r.Context(), "robby: chat completion failed", slog.String("request_id", id),
			slog.String("model", req.model), slog.Any("error", err))
		reply.fail(err, id)
	}
}

// conversation makes the fresh agent and run options of one request. The
// agent's system prompt comes first, then the client's messages. The client's
// parameters are laid over the agent's. The client's tools are run by the
// client.
func conversation(agent *robby.Agent, req *chatRequest) (*robby.Agent, []robby.RunOption, error) {
	if err := answered(req.messages); err != nil {
		return nil, nil, err
	}
	if err := onlyClientCalls(agent, nil, req.messages); err != nil {
		return nil, nil, err
	}
	if err := clientTools(agent, req.tools); err != nil {
		return nil, nil, err
	}
	params, err := requestParams(req.fields)
	if err != nil {
		return nil, nil, err
	}
	conv := agent.Clone()
	conv.Reset()
	conv.AddMessages(req.messages...)
	return conv, []robby.RunOption{robby.WithRunParams(params), robby.WithCallerTools(req.tools...)}, nil
}

// answered checks that the last assistant message's tool calls all have their
// results. OpenAI requires it; otherwise the agent would give the model "no
// result" for them.
func answered(msgs []openai.ChatCompletionMessageParamUnion) error {
	results := map[string]bool{}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.OfTool != nil {
			results[m.OfTool.ToolCallID] = true
			continue
		}
		if m.OfAssistant != nil {
			for _, tc := range m.OfAssistant.ToolCalls {
				if id := tc.GetID(); id != nil && !results[*id] {
					return fmt.Errorf("messages[%d]: tool call %q has no tool message answering it", i, *id)
				}
			}
		}
		return nil
	}
	return nil
}

// clientTools checks that the client's tools do not have the names of the
// agent's own.
func clientTools(agent *robby.Agent, defs []openai.FunctionDefinitionParam) error {
	if len(defs) == 0 {
		return nil
	}
	own := map[string]bool{}
	for _, t := range agent.Tools() {
		own[t.Name()] = true
	}
	for _, d := range defs {
		if own[d.Name] {
			return fmt.Errorf("tool %q has the name of one of the agent's own tools", d.Name)
		}
	}
	return nil
}

// serverOwned are the request fields the server sets itself.
var serverOwned = []string{"model", "messages", "tools", "stream", "stream_options", "n"}

// requestParams returns the client's request parameters: the request's members
// but those the server sets. Parameters openai-go has no field for (a
// provider's own, such as top_k) are kept. One of a known name that does not
// fit its field is refused.
func requestParams(fields map[string]json.RawMessage) (openai.ChatCompletionNewParams, error) {
	client := maps.Clone(fields)
	for k := range client {
		// In any case: a Go upstream reads "Stream" as "stream".
		if slices.ContainsFunc(serverOwned, func(o string) bool { return strings.EqualFold(k, o) }) {
			delete(client, k)
		}
	}
	b, err := json.Marshal(client)
	if err != nil {
		return openai.ChatCompletionNewParams{}, err
	}
	var p openai.ChatCompletionNewParams
	if err := p.UnmarshalJSON(b); err != nil {
		return openai.ChatCompletionNewParams{}, fmt.Errorf("invalid request parameters: %v", err)
	}
	return p, keepUnread(&p, client)
}

// keepUnread checks that every parameter survived decoding into p. Decoding
// drops unknown names and values of the wrong type. The first are kept as extra
// fields; the second are refused.
func keepUnread(p *openai.ChatCompletionNewParams, params map[string]json.RawMessage) error {
	b, err := p.MarshalJSON()
	if err != nil {
		return fmt.Errorf("invalid request parameters: %v", err)
	}
	var read map[string]json.RawMessage
	if err := json.Unmarshal(b, &read); err != nil {
		return err
	}
	extra := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if _, ok := read[k]; ok || string(params[k]) == "null" {
			continue
		}
		switch {
		case k == "":
			return errors.New("invalid request parameters: a parameter has no name")
		case paramNames()[k]:
			return fmt.Errorf("invalid request parameters: %q is not of the type the API defines: %s", k, params[k])
		}
		extra[k] = params[k]
	}
	if len(extra) > 0 {
		p.SetExtraFields(extra)
	}
	return nil
}

// paramNames are the names of the request parameters openai-go knows.
var paramNames = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	t := reflect.TypeFor[openai.ChatCompletionNewParams]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			names[name] = true
		}
	}
	return names
})
