package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The APIs a user talks over.
const (
	apiResponses = "responses" // robby's /v1/responses, continued by previous_response_id
	apiChat      = "chat"      // robby's /v1/chat/completions, the history sent each turn
	apiFloor     = "floor"     // the model's chat completions through a plain reverse proxy
)

// A turn is what one user sent and got in one request (two for the floor's
// tool turn, which the client runs itself).
type turn struct {
	user     int
	key      string
	prompt   string
	answer   string // the streamed text
	response string // the response's ID (Responses API)
	took     time.Duration
	model    time.Duration // the model's share of took
	err      error
}

// A driver runs the users of one API against one base URL.
type driver struct {
	api    string
	base   string
	turns  int
	words  int
	model  *model
	client *http.Client
	prefix string             // of this run's users' names
	tools  *mcp.ClientSession // the floor's, to the lookup server
}

// run runs user u's conversation, turn after turn, and returns its turns.
// It stops at the first failed turn.
func (d *driver) run(ctx context.Context, u int) []turn {
	token := userToken(d.prefix, u)
	var history []chatMessage
	var previous string
	var out []turn
	for t := range d.turns {
		key := fmt.Sprintf("[u%d t%d]", u, t+1)
		tr := turn{user: u, key: key, prompt: key + " question " + fmt.Sprint(t+1)}
		lookup := ""
		if t == 0 {
			tr.prompt += " " + toolMark
			lookup = lookupResult(key)
		}
		start := time.Now()
		switch d.api {
		case apiResponses:
			tr.answer, tr.response, tr.err = d.respond(ctx, token, tr.prompt, previous)
			previous = tr.response
		default:
			history = append(history, chatMessage{Role: "user", Content: tr.prompt})
			tr.answer, tr.err = d.chat(ctx, token, &history, key)
		}
		tr.took, tr.model = time.Since(start), d.model.took(key)
		if want := answer(key, lookup, d.words); tr.err == nil && tr.answer != want {
			tr.err = fmt.Errorf("%s: answer %q, want %q", key, tr.answer, want)
		}
		out = append(out, tr)
		if tr.err != nil {
			break
		}
	}
	return out
}

// respond streams one response and returns its text and ID.
func (d *driver) respond(ctx context.Context, token, prompt, previous string) (string, string, error) {
	var text strings.Builder
	var id string
	req := responsesRequest{Model: "load", Input: prompt, PreviousResponseID: previous, Stream: true}
	err := stream(ctx, d, token, "/responses", req, func(ev *responseEvent) error {
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed":
			id = ev.Response.ID
		case "error", "response.failed":
			return errors.New("a failed stream")
		}
		return nil
	})
	if err != nil {
		return "", "", err
	}
	if id == "" {
		return "", "", errors.New("the stream ended without response.completed")
	}
	return text.String(), id, nil
}

// chat streams chat completions on history until one answers with text, and
// adds the answer to history. Through robby that is one request. The floor
// gets the lookup call, and calls the tool on its MCP server before it asks
// again.
func (d *driver) chat(ctx context.Context, token string, history *[]chatMessage, key string) (string, error) {
	for range 2 {
		msg, err := d.complete(ctx, token, *history)
		if err != nil {
			return "", err
		}
		*history = append(*history, msg)
		if len(msg.ToolCalls) == 0 {
			return msg.Content, nil
		}
		if d.api != apiFloor {
			return "", fmt.Errorf("robby sent the tool call %s", msg.ToolCalls[0].Function.Name)
		}
		for _, c := range msg.ToolCalls {
			out, err := d.lookup(ctx, c.Function.Arguments)
			if err != nil {
				return "", fmt.Errorf("%s: %w", key, err)
			}
			*history = append(*history, chatMessage{Role: "tool", Content: out, ToolCallID: c.ID})
		}
	}
	return "", errors.New("the model called the tool twice")
}

// complete streams one chat completion of history and returns its message,
// the text and tool calls joined from their fragments.
func (d *driver) complete(ctx context.Context, token string, history []chatMessage) (chatMessage, error) {
	var text strings.Builder
	var calls []*callParts
	choices, finish := 0, ""
	req := chatCompletionRequest{Model: "load", Messages: history, Stream: true}
	err := stream(ctx, d, token, "/chat/completions", req, func(ch *chatChunk) error {
		for _, c := range ch.Choices {
			choices = max(choices, c.Index+1)
			text.WriteString(c.Delta.Content)
			for _, f := range c.Delta.ToolCalls {
				if f.Index == len(calls) {
					calls = append(calls, &callParts{})
				}
				if f.Index < 0 || f.Index >= len(calls) {
					return fmt.Errorf("a fragment of tool call %d after %d calls", f.Index, len(calls))
				}
				calls[f.Index].add(f.ID, f.Function)
			}
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
		return nil
	})
	switch {
	case err != nil:
		return chatMessage{}, err
	case choices != 1:
		return chatMessage{}, fmt.Errorf("%d choices", choices)
	case finish == "":
		return chatMessage{}, errors.New("the stream ended without a finish_reason")
	}
	msg := chatMessage{Role: "assistant", Content: text.String()}
	for _, c := range calls {
		msg.ToolCalls = append(msg.ToolCalls, c.call())
	}
	return msg, nil
}

// callParts joins a streamed tool call's fragments, in linear time: the ID
// comes whole, the name and arguments in pieces.
type callParts struct {
	id         string
	name, args strings.Builder
}

func (p *callParts) add(id string, f toolFunction) {
	if id != "" {
		p.id = id
	}
	p.name.WriteString(f.Name)
	p.args.WriteString(f.Arguments)
}

func (p *callParts) call() toolCall {
	return toolCall{ID: p.id, Type: "function", Function: toolFunction{Name: p.name.String(), Arguments: p.args.String()}}
}

// lookup calls the lookup tool with the model's arguments, on the MCP server
// robby calls it on, as a program would by hand with the go-sdk.
func (d *driver) lookup(ctx context.Context, arguments string) (string, error) {
	res, err := d.tools.CallTool(ctx, &mcp.CallToolParams{Name: "lookup", Arguments: json.RawMessage(arguments)})
	if err != nil {
		return "", err
	}
	if len(res.Content) == 1 && !res.IsError {
		if text, ok := res.Content[0].(*mcp.TextContent); ok {
			return text.Text, nil
		}
	}
	return "", fmt.Errorf("lookup: an unexpected result %+v", res)
}

// drive runs users concurrently, each started ramp/users after the one
// before, and returns every turn and the time they took.
func (d *driver) drive(ctx context.Context, users int, ramp time.Duration) ([]turn, time.Duration) {
	var mu sync.Mutex
	var all []turn
	var wg sync.WaitGroup
	start := time.Now()
	for u := range users {
		if ramp > 0 {
			time.Sleep(time.Until(start.Add(ramp * time.Duration(u) / time.Duration(users))))
		}
		wg.Go(func() {
			turns := d.run(ctx, u)
			mu.Lock()
			all = append(all, turns...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return all, time.Since(start)
}

// userName and userToken name user u of a run of robby's token file. The
// prefix tells runs apart in a database that several share.
func userName(prefix string, u int) string  { return fmt.Sprintf("%s-u%d", prefix, u) }
func userToken(prefix string, u int) string { return fmt.Sprintf("%s-token-%d", prefix, u) }
