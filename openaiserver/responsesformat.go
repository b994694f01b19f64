package openaiserver

import (
	"encoding/json"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/schemas"
)

// A response's text.format asks for structured output: json_schema (an
// object that fits a schema) or json_object. It becomes the model request's
// response_format. The answer is checked as a typed run checks its own:
// with repairs, and the fallbacks for models that take no response_format
// ([robby.WithAnswerSchema]). The response echoes text as OpenAI's does.

// wireText is a request's text member, and the response's echo of it.
type wireText struct {
	Format    json.RawMessage `json:"format"`
	Verbosity *string         `json:"verbosity"`
}

// textFormat is what the endpoint reads of text.format.
type textFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

// plainText is the text member of a response that asked for no format.
var plainText = wireText{Format: json.RawMessage(`{"type":"text"}`), Verbosity: new("medium")}

// decodeText reads a request's text member. It returns the echo of it, and
// for structured output the run's options: its response_format laid over
// params, and its schema.
func decodeText(raw json.RawMessage, params *openai.ChatCompletionNewParams) (wireText, []robby.RunOption, error) {
	if isNull(raw) {
		return plainText, nil, nil
	}
	var t wireText
	if raw[0] != '{' || json.Unmarshal(raw, &t) != nil {
		return t, nil, invalid("invalid_request", "'text' must be an object.")
	}
	if v := t.Verbosity; v != nil && *v != "medium" {
		return t, nil, invalid("unsupported_parameter", "'text.verbosity' is not supported by this endpoint: only \"medium\" is.")
	}
	t.Verbosity = plainText.Verbosity
	if isNull(t.Format) {
		t.Format = plainText.Format
		return t, nil, nil
	}
	var f textFormat
	if t.Format[0] != '{' || json.Unmarshal(t.Format, &f) != nil {
		return t, nil, invalid("invalid_request", "'text.format' must be an object.")
	}
	switch f.Type {
	case "text":
		return t, nil, nil
	case "json_object":
		params.ResponseFormat.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
		return t, []robby.RunOption{robby.WithAnswerSchema(map[string]any{"type": "object"})}, nil
	case "json_schema":
	default:
		return t, nil, invalid("invalid_value", "'text.format.type' must be 'text', 'json_schema' or 'json_object', not %q.", f.Type)
	}
	if f.Name == "" {
		return t, nil, invalid("missing_required_parameter", "'text.format.name' is required with 'json_schema'.")
	}
	var schema map[string]any
	if isNull(f.Schema) || json.Unmarshal(f.Schema, &schema) != nil {
		return t, nil, invalid("invalid_request", "'text.format.schema' must be a JSON Schema object.")
	}
	if as := schemas.AnswerFrom(schema); as.Err != nil {
		return t, nil, invalid("invalid_request", "'text.format.schema' is not usable: %v.", as.Err)
	}
	js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: f.Name, Schema: f.Schema}
	if f.Description != nil {
		js.Description = openai.String(*f.Description)
	}
	if f.Strict != nil {
		js.Strict = openai.Bool(*f.Strict)
	}
	params.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}
	return t, []robby.RunOption{robby.WithAnswerSchema(schema)}, nil
}

// structured reports whether t asks for JSON: json_schema or json_object.
func (t wireText) structured() bool {
	var f struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(t.Format, &f) == nil && (f.Type == "json_schema" || f.Type == "json_object")
}
