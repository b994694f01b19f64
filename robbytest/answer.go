package robbytest

import (
	"encoding/json"
	"net/http"
)

// Answer is a reply giving a typed answer, value (JSON text), the way the
// request asks for it. A request that sets response_format (native mode) gets
// it as the text. A request offering the answer tool (robby_final_answer, else
// final_answer) gets a call of it. Any other gets prose with the JSON in a code
// fence, as models answer a prompt asking for JSON.
func Answer(value string) Reply {
	return Func(func(req Request) Reply {
		switch {
		case AsksJSONSchema(req):
			return Text(value)
		case answerTool(req) != "":
			return ToolCalls(Call(answerTool(req), value))
		}
		return Text("Here is the answer:\n```json\n" + value + "\n```\nLet me know if you need more.")
	})
}

// Constrained is r as given by a server that turns response_format's schema
// into a grammar over the whole reply. llama.cpp, Ollama and vLLM do so, tools
// or not. A request with response_format json_schema gets value, JSON text the
// grammar lets through, whatever r says. (A tool call cannot get past the
// grammar.) The others get r.
func Constrained(value string, r Reply) Reply {
	return Func(func(req Request) Reply {
		if AsksJSONSchema(req) {
			return Text(value)
		}
		return r
	})
}

// AsksJSONSchema reports whether a request asks for an answer with
// response_format json_schema.
func AsksJSONSchema(req Request) bool {
	var rf struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(req.ResponseFormat, &rf) == nil && rf.Type == "json_schema"
}

func answerTool(req Request) string {
	// robby names it robby_final_answer when the agent has a
	// final_answer tool of its own.
	for _, name := range []string{"robby_final_answer", "final_answer"} {
		for _, t := range req.Tools {
			if t == name {
				return name
			}
		}
	}
	return ""
}

// schemaRefusals are the answers of providers (or their versions) that do not
// take response_format json_schema. Status and body are as they send them.
var schemaRefusals = map[string]struct {
	status int
	body   string
}{
	OpenAI: {http.StatusBadRequest, `{"error":{"message":"Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model. ` +
		`Learn more about supported models at the Structured Outputs guide: https://platform.openai.com/docs/guides/structured-outputs",` +
		`"type":"invalid_request_error","param":null,"code":null}}`},
	// Gemini's OpenAI endpoint takes response_format, but refuses the
	// schema keywords Gemini's response_schema lacks.
	Gemini: {http.StatusBadRequest, `[{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"additionalProperties\" at ` +
		`'generation_config.response_schema': Cannot find field.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.BadRequest",` +
		`"fieldViolations":[{"field":"generation_config.response_schema","description":"Invalid JSON payload received. Unknown name ` +
		`\"additionalProperties\" at 'generation_config.response_schema': Cannot find field."}]}]}}]`},
	LlamaCpp: {http.StatusInternalServerError, `{"error":{"code":500,"message":"response_format type must be one of \"text\" or \"json_object\", but got: json_schema","type":"server_error"}}`},
	Ollama:   {http.StatusBadRequest, `{"error":{"message":"invalid format: expected \"json\" or a JSON schema","type":"invalid_request_error","param":null,"code":null}}`},
	VLLM:     {http.StatusBadRequest, `{"object":"error","message":"The provided JSON schema contains features not supported by xgrammar.","type":"BadRequestError","param":null,"code":400}`},
}

// toolsRefusals are the answers of servers that take no tools.
var toolsRefusals = map[string]struct {
	status int
	body   string
}{
	LlamaCpp: {http.StatusInternalServerError, `{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}`},
	Ollama:   {http.StatusBadRequest, `{"error":{"message":"registry.ollama.ai/library/gemma:2b does not support tools","type":"api_error","param":null,"code":null}}`},
	VLLM: {http.StatusBadRequest, `{"object":"error","message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set",` +
		`"type":"BadRequestError","param":null,"code":400}`},
}

// SchemaRefusal is the error provider (such as [OpenAI]) answers to a request
// with response_format json_schema it (or the model) does not take. For
// [LlamaCpp] it is the refusal of older servers and forks. It panics for a
// provider it does not know.
func SchemaRefusal(provider string) Reply {
	r, ok := schemaRefusals[provider]
	if !ok {
		panic("robbytest: no schema refusal known for " + provider)
	}
	return Error(r.status, r.body)
}

// SchemaWithToolsRefusal is llama.cpp's refusal of response_format together
// with tools. llama.cpp turns the schema into a grammar, which its tool calling
// cannot share.
func SchemaWithToolsRefusal() Reply {
	return Error(http.StatusBadRequest, `{"error":{"code":400,"message":"Cannot use custom grammar constraints with tools.","type":"invalid_request_error"}}`)
}

// ToolsRefusal is the error a server that takes no tools answers to a request
// offering some. Such servers are [LlamaCpp] started without --jinja, an
// [Ollama] model without tool support, and [VLLM] without a tool parser. It
// panics for a provider it does not know.
func ToolsRefusal(provider string) Reply {
	r, ok := toolsRefusals[provider]
	if !ok {
		panic("robbytest: no tools refusal known for " + provider)
	}
	return Error(r.status, r.body)
}

// SchemaProviders returns the providers [SchemaRefusal] knows, for tests
// that try each.
func SchemaProviders() []string {
	return []string{OpenAI, Gemini, LlamaCpp, Ollama, VLLM}
}
