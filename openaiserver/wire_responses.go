package openaiserver

import "encoding/json"

// The wire types of POST /v1/responses, GET and DELETE /v1/responses/{id} and
// GET /v1/responses/{id}/input_items. They are the request as the endpoint
// reads it, the response object and its output items. Then the events of a
// streamed response, and the list of input items.

// wireResponsesRequest is what the endpoint reads of a request.
type wireResponsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Store              *bool           `json:"store"`
	Stream             bool            `json:"stream"`
	Tools              []wireTool      `json:"tools"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"top_p"`
	MaxOutputTokens    *int64          `json:"max_output_tokens"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	Metadata           map[string]any  `json:"metadata"`

	// Members whose meaning the endpoint does not provide: a request
	// that sets one other than as the endpoint works anyway is refused.
	Background   json.RawMessage `json:"background"`
	Conversation json.RawMessage `json:"conversation"`
	Prompt       json.RawMessage `json:"prompt"`
	Text         json.RawMessage `json:"text"`
	ToolChoice   json.RawMessage `json:"tool_choice"`
	Reasoning    json.RawMessage `json:"reasoning"`
	MaxToolCalls json.RawMessage `json:"max_tool_calls"`
	TopLogprobs  json.RawMessage `json:"top_logprobs"`
}

// wireTool is a tool of a request: a function the client runs.
type wireTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// wireInputItem is an item of a request's input. It is a message (its type
// "message" or left out), or a function call of an earlier response. Or it is
// the output the client's function gave.
type wireInputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Name    string          `json:"name"`
	Args    string          `json:"arguments"`
	Output  json.RawMessage `json:"output"`
}

// wireInputPart is a part of an input message's content.
type wireInputPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"`
	Detail   string `json:"detail"`
	FileID   string `json:"file_id"`
}

// wireResponse is a response object.
type wireResponse struct {
	ID                 string               `json:"id"`
	Object             string               `json:"object"`
	CreatedAt          int64                `json:"created_at"`
	Status             string               `json:"status"`
	Error              *wireResponseError   `json:"error"`
	IncompleteDetails  *wireIncomplete      `json:"incomplete_details"`
	Instructions       *string              `json:"instructions"`
	MaxOutputTokens    *int64               `json:"max_output_tokens"`
	Model              string               `json:"model"`
	Output             []wireOutputItem     `json:"output"`
	ParallelToolCalls  bool                 `json:"parallel_tool_calls"`
	PreviousResponseID *string              `json:"previous_response_id"`
	Store              bool                 `json:"store"`
	Temperature        *float64             `json:"temperature"`
	TopP               *float64             `json:"top_p"`
	ToolChoice         string               `json:"tool_choice"`
	Tools              []wireTool           `json:"tools"`
	Usage              *wireResponsesUsage  `json:"usage,omitempty"`
	Metadata           map[string]any       `json:"metadata"`
	Background         bool                 `json:"background,omitempty"`
	Text               wireText             `json:"text"`
	Conversation       *wireConversationRef `json:"conversation"`
}

// wireResponseError is why a response failed.
type wireResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// wireIncomplete is why a response is incomplete.
type wireIncomplete struct {
	Reason string `json:"reason"`
}

// wireOutputItem is an output item: an assistant message, or a call of one
// of the client's functions.
type wireOutputItem struct {
	ID        string           `json:"id"`
	Type      string           `json:"type"`
	Status    string           `json:"status"`
	Role      string           `json:"role,omitempty"`
	Content   []wireOutputText `json:"content,omitzero"` // [] in a message, even empty
	CallID    string           `json:"call_id,omitempty"`
	Name      string           `json:"name,omitempty"`
	Arguments *string          `json:"arguments,omitempty"`
	Agent     string           `json:"agent,omitempty"` // robby's: the team's agent that wrote it
}

// wireOutputText is the content of an assistant message.
type wireOutputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

type wireResponsesUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

// wireDeleted answers DELETE /v1/responses/{id}.
type wireDeleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// wireEvent is an event of a streamed response; each kind of event uses
// its own fields.
type wireEvent struct {
	Type           string          `json:"type"`
	SequenceNumber int64           `json:"sequence_number"`
	Response       *wireResponse   `json:"response,omitempty"`
	OutputIndex    *int            `json:"output_index,omitempty"`
	Item           *wireOutputItem `json:"item,omitempty"`
	ItemID         string          `json:"item_id,omitempty"`
	ContentIndex   *int            `json:"content_index,omitempty"`
	Part           *wireOutputText `json:"part,omitempty"`
	Delta          *string         `json:"delta,omitempty"`
	Text           *string         `json:"text,omitempty"`
	Name           string          `json:"name,omitempty"` // of the function whose arguments are done
	Arguments      *string         `json:"arguments,omitempty"`
	Logprobs       []any           `json:"logprobs,omitzero"` // [] in text events
	Code           string          `json:"code,omitempty"`
	Message        string          `json:"message,omitempty"`
	Param          json.RawMessage `json:"param,omitempty"` // null in an error event
}

// wireItemList is a page of GET /v1/responses/{id}/input_items.
type wireItemList struct {
	Object  string     `json:"object"`
	Data    []wireItem `json:"data"`
	FirstID *string    `json:"first_id"`
	LastID  *string    `json:"last_id"`
	HasMore bool       `json:"has_more"`
}

// wireItem is an input item as listed: a message, a function call or a
// function call's output.
type wireItem struct {
	ID        string         `json:"id"`
	Type      string         `json:"type"`
	Status    string         `json:"status"`
	Role      string         `json:"role,omitempty"`
	Content   []wireItemPart `json:"content,omitzero"`
	CallID    string         `json:"call_id,omitempty"`
	Name      string         `json:"name,omitempty"`
	Arguments *string        `json:"arguments,omitempty"`
	Output    *string        `json:"output,omitempty"`
}

// wireItemPart is a part of a listed message: input_text, input_image or
// (the assistant's) output_text.
type wireItemPart struct {
	Type        string `json:"type"`
	Text        string `json:"text,omitempty"`
	ImageURL    string `json:"image_url,omitempty"`
	Detail      string `json:"detail,omitempty"`
	Annotations []any  `json:"annotations,omitzero"` // [] in output_text
	Logprobs    []any  `json:"logprobs,omitzero"`    // [] in output_text
}
