package bench

// The floor: the same conversation with nothing but net/http and
// encoding/json, written by hand for this one wire. No library does less,
// so robby ÷ floor is what the whole stack above the socket costs.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// floorTools is the tools' part of every request, encoded once.
var floorTools = json.RawMessage(`[` +
	`{"type":"function","function":{"name":"add","description":"Adds two integers.","parameters":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}}},` +
	`{"type":"function","function":{"name":"mul","description":"Multiplies two integers.","parameters":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}}}]`)

type floorCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type floorMessage struct {
	Role       string      `json:"role"`
	Content    string      `json:"content,omitempty"`
	ToolCalls  []floorCall `json:"tool_calls,omitempty"`
	ToolCallID string      `json:"tool_call_id,omitempty"`
}

type floorRequest struct {
	Model         string          `json:"model"`
	Messages      []floorMessage  `json:"messages"`
	Tools         json.RawMessage `json:"tools"`
	Stream        bool            `json:"stream,omitempty"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
}

type floorAgent struct {
	client *http.Client
	url    string
}

func newFloor(url string) *floorAgent {
	return &floorAgent{client: sharedHTTPClient(), url: url + "/chat/completions"}
}

// post sends one request and hands the response body to read.
func (f *floorAgent) post(ctx context.Context, req *floorRequest, read func(*http.Response) error) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	res, err := f.client.Do(hr)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return errors.New("floor: " + res.Status)
	}
	return read(res)
}

// floorLoop runs the conversation with turn, which asks the model once.
func floorLoop(tb testing.TB, ctx context.Context, turn func([]floorMessage) (floorMessage, error)) string {
	msgs := []floorMessage{{Role: "user", Content: benchPrompt}}
	for range 10 {
		msg, err := turn(msgs)
		if err != nil {
			tb.Fatal(err)
		}
		if len(msg.ToolCalls) == 0 {
			return msg.Content
		}
		msgs = append(msgs, msg)
		for _, tc := range msg.ToolCalls {
			out := dispatch(ctx, tc.Function.Name, tc.Function.Arguments)
			msgs = append(msgs, floorMessage{Role: "tool", Content: out, ToolCallID: tc.ID})
		}
	}
	tb.Fatal("floor: too many turns")
	return ""
}

func floorSync(tb testing.TB, ctx context.Context, f *floorAgent) {
	text := floorLoop(tb, ctx, func(msgs []floorMessage) (floorMessage, error) {
		var out struct {
			Choices []struct {
				Message floorMessage `json:"message"`
			} `json:"choices"`
		}
		err := f.post(ctx, &floorRequest{Model: benchModel, Messages: msgs, Tools: floorTools},
			func(res *http.Response) error { return json.NewDecoder(res.Body).Decode(&out) })
		if err == nil && len(out.Choices) == 0 {
			err = errors.New("floor: no choices")
		}
		if err != nil {
			return floorMessage{}, err
		}
		return out.Choices[0].Message, nil
	})
	checkText(tb, "floor", text)
	checkCalls(tb, "floor")
}

// floorChunk is what a streamed turn reads of each chunk.
type floorChunk struct {
	Choices []struct {
		Delta struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				Index int `json:"index"`
				floorCall
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// readStream assembles one streamed message from server-sent events,
// writing its text to streamed as it comes.
func readStream(res *http.Response, streamed *strings.Builder) (floorMessage, error) {
	msg := floorMessage{Role: "assistant"}
	var text strings.Builder
	finished := false
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		if string(data) == "[DONE]" {
			break
		}
		var c floorChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return msg, err
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
			streamed.WriteString(ch.Delta.Content)
			for _, d := range ch.Delta.ToolCalls {
				for len(msg.ToolCalls) <= d.Index {
					msg.ToolCalls = append(msg.ToolCalls, floorCall{Type: "function"})
				}
				tc := &msg.ToolCalls[d.Index]
				if d.ID != "" {
					tc.ID = d.ID
				}
				tc.Function.Name += d.Function.Name
				tc.Function.Arguments += d.Function.Arguments
			}
			finished = finished || ch.FinishReason != ""
		}
	}
	if err := sc.Err(); err != nil {
		return msg, err
	}
	if !finished {
		return msg, errors.New("floor: incomplete stream")
	}
	msg.Content = text.String()
	return msg, nil
}

func floorStream(tb testing.TB, ctx context.Context, f *floorAgent) {
	var streamed strings.Builder
	req := floorRequest{Model: benchModel, Tools: floorTools, Stream: true}
	req.StreamOptions = &struct {
		IncludeUsage bool `json:"include_usage"`
	}{true}
	text := floorLoop(tb, ctx, func(msgs []floorMessage) (msg floorMessage, err error) {
		req.Messages = msgs
		err = f.post(ctx, &req, func(res *http.Response) error {
			msg, err = readStream(res, &streamed)
			return err
		})
		return msg, err
	})
	checkText(tb, "floor", streamed.String())
	checkText(tb, "floor", text)
	checkCalls(tb, "floor")
}
