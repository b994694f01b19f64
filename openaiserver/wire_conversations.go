package openaiserver

import "encoding/json"

// The wire types of the Conversations API: /v1/conversations and its items.

// wireConversation is a conversation object.
type wireConversation struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	CreatedAt int64             `json:"created_at"`
	Metadata  map[string]string `json:"metadata"`
}

// wireConversationRequest is the body of POST /v1/conversations and of
// POST /v1/conversations/{id}.
type wireConversationRequest struct {
	Items    json.RawMessage `json:"items"`
	Metadata json.RawMessage `json:"metadata"`
}

// wireConversationDeleted answers DELETE /v1/conversations/{id}.
type wireConversationDeleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// wireConversationRef names the conversation a response ran in.
type wireConversationRef struct {
	ID string `json:"id"`
}
