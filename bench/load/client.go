package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3/packages/ssestream"
)

// The clients send what openai-go would and decode, with encoding/json, only
// the fields they check: openai-go's full decoding of every event cost the
// load process 1.5 ms of CPU a Responses turn, on the cores robby shares.

// responsesRequest is a streamed request to /responses.
type responsesRequest struct {
	Model              string `json:"model"`
	Input              string `json:"input"`
	PreviousResponseID string `json:"previous_response_id,omitempty"`
	Stream             bool   `json:"stream"`
}

// responseEvent is what a client reads of a Responses stream event.
type responseEvent struct {
	streamError
	Type     string `json:"type"`
	Delta    string `json:"delta"`
	Response struct {
		ID string `json:"id"`
	} `json:"response"`
}

// chatCompletionRequest is a streamed request to /chat/completions.
type chatCompletionRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
	Stream   bool          `json:"stream"`
}

// chatMessage is a message of the history a chat client sends.
type chatMessage struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

type toolFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// chatChunk is what a client reads of a chat.completion.chunk.
type chatChunk struct {
	streamError
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				Index    int          `json:"index"`
				ID       string       `json:"id"`
				Function toolFunction `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// streamError is an event's error object. It ends the stream whatever the
// event, as in openai-go: robby's chat completions send one so.
type streamError struct {
	Error json.RawMessage `json:"error"`
}

func (e *streamError) err() error {
	if e.Error == nil {
		return nil
	}
	return fmt.Errorf("an error while streaming: %s", e.Error)
}

// stream posts body as JSON to path under d.base as the user of token, and
// calls f with each event of the streamed answer, decoded into an E, until f
// fails, the stream ends or [DONE] ends it.
func stream[E any, P interface {
	*E
	err() error
}](ctx context.Context, d *driver, token, path string, body any, f func(*E) error) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	url := strings.TrimSuffix(d.base, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := d.client.Do(req)
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
		res.Body.Close()
		return fmt.Errorf("POST %s: %s: %s", url, res.Status, bytes.TrimSpace(msg))
	}
	events := ssestream.NewDecoder(res)
	defer events.Close()
	var ev E // reused: it escapes to the heap, once a stream rather than once an event
	for events.Next() {
		data := events.Event().Data
		if bytes.HasPrefix(data, []byte("[DONE]")) {
			return nil
		}
		ev = *new(E)
		if err := json.Unmarshal(data, &ev); err != nil {
			return fmt.Errorf("an event %q: %w", bytes.TrimSpace(data), err)
		}
		if err := P(&ev).err(); err != nil {
			return err
		}
		if err := f(&ev); err != nil {
			return fmt.Errorf("%w, at the event %s", err, bytes.TrimSpace(data))
		}
	}
	return events.Err()
}
