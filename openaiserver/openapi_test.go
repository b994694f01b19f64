package openaiserver_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
)

// openAPI returns a validator of the objects OpenAI's OpenAPI spec names,
// read from testdata/openapi (see its README).
func openAPI(t *testing.T) func(name string, v any) error {
	t.Helper()
	b, err := os.ReadFile("testdata/openapi/schemas.json")
	require.NoError(t, err)
	b = bytes.ReplaceAll(b, []byte(`"#/components/schemas/`), []byte(`"#/$defs/`))
	var raw any
	require.NoError(t, json.Unmarshal(b, &raw))
	b, err = json.Marshal(nullable(raw))
	require.NoError(t, err)
	var defs map[string]*jsonschema.Schema
	require.NoError(t, json.Unmarshal(b, &defs))
	resolved := map[string]*jsonschema.Resolved{}
	return func(name string, v any) error {
		r, ok := resolved[name]
		if !ok {
			s := &jsonschema.Schema{Ref: "#/$defs/" + name, Defs: defs}
			var err error
			if r, err = s.Resolve(nil); err != nil {
				return err
			}
			resolved[name] = r
		}
		return r.Validate(v)
	}
}

// nullable rewrites OpenAPI's "nullable": true, which some of the spec's
// schemas still use, as JSON Schema says it: null among the types.
func nullable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = nullable(e)
		}
		if v["nullable"] == true {
			delete(v, "nullable")
			if typ, ok := v["type"].(string); ok {
				v["type"] = []any{typ, "null"}
			}
			if enum, ok := v["enum"].([]any); ok {
				v["enum"] = append(enum, nil)
			}
		}
	case []any:
		for i, e := range v {
			v[i] = nullable(e)
		}
	}
	return v
}

// call sends body to path and returns the answer's JSON, or its events'.
func call(t *testing.T, method, url, token, body string) []any {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		var v any
		require.NoError(t, json.Unmarshal(b, &v), string(b))
		return []any{v}
	}
	var events []any
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var v any
		require.NoError(t, json.Unmarshal([]byte(data), &v), data)
		events = append(events, v)
	}
	require.NoError(t, sc.Err())
	return events
}

// eventSchemas names the schema of each kind of event.
var eventSchemas = map[string]string{
	"response.created":                       "ResponseCreatedEvent",
	"response.in_progress":                   "ResponseInProgressEvent",
	"response.output_item.added":             "ResponseOutputItemAddedEvent",
	"response.output_item.done":              "ResponseOutputItemDoneEvent",
	"response.content_part.added":            "ResponseContentPartAddedEvent",
	"response.content_part.done":             "ResponseContentPartDoneEvent",
	"response.output_text.delta":             "ResponseTextDeltaEvent",
	"response.output_text.done":              "ResponseTextDoneEvent",
	"response.function_call_arguments.delta": "ResponseFunctionCallArgumentsDeltaEvent",
	"response.function_call_arguments.done":  "ResponseFunctionCallArgumentsDoneEvent",
	"response.completed":                     "ResponseCompletedEvent",
	"response.incomplete":                    "ResponseIncompleteEvent",
	"response.failed":                        "ResponseFailedEvent",
	"error":                                  "ResponseErrorEvent",
}

// TestObjectsFitOpenAIsSpec: every object robby returns has the fields
// OpenAI's OpenAPI spec marks required (null where they have no value), of
// the types it gives.
func TestObjectsFitOpenAIsSpec(t *testing.T) {
	validate := openAPI(t)
	srv := newServer(t)
	url := serveResponses(t, srv, openaiserver.Options{Store: newStore(t), Tokens: map[string]string{"tok": "alice"}})
	check := func(name string, vs []any) {
		t.Helper()
		for _, v := range vs {
			schema := name
			if name == "event" {
				schema = eventSchemas[v.(map[string]any)["type"].(string)]
			}
			b, _ := json.Marshal(v)
			if err := validate(schema, v); err != nil {
				t.Errorf("%s: %v\n%s", schema, err, b)
			}
		}
	}
	const tools = `"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object","properties":{}}}}]`
	const rtools = `"tools":[{"type":"function","name":"lookup","parameters":{"type":"object","properties":{}}}]`
	chat := func(stream bool) string {
		return `{"model":"robby","stream":` + map[bool]string{true: "true", false: "false"}[stream] + `,"messages":[{"role":"user","content":"hi"}],` + tools + `}`
	}

	srv.Reply(robbytest.Text("Hello."), robbytest.ToolCalls(robbytest.Call("lookup", `{}`)))
	check("CreateChatCompletionResponse", call(t, "POST", url+"/v1/chat/completions", "tok", chat(false)))
	check("CreateChatCompletionResponse", call(t, "POST", url+"/v1/chat/completions", "tok", chat(false)))
	srv.Reply(robbytest.Text("Hello."), robbytest.ToolCalls(robbytest.Call("lookup", `{}`)))
	check("CreateChatCompletionStreamResponse", call(t, "POST", url+"/v1/chat/completions", "tok", chat(true)))
	check("CreateChatCompletionStreamResponse", call(t, "POST", url+"/v1/chat/completions", "tok", chat(true)))
	check("ListModelsResponse", call(t, "GET", url+"/v1/models", "tok", ""))

	srv.Reply(robbytest.Text("Hello."), robbytest.ToolCalls(robbytest.Call("lookup", `{}`)))
	resp := call(t, "POST", url+"/v1/responses", "tok", `{"model":"robby","input":"hi",`+rtools+`}`)
	check("Response", resp)
	check("Response", call(t, "POST", url+"/v1/responses", "tok", `{"model":"robby","input":"hi",`+rtools+`}`))
	srv.Reply(robbytest.Text("Hello."), robbytest.ToolCalls(robbytest.Call("lookup", `{}`)))
	check("event", call(t, "POST", url+"/v1/responses", "tok", `{"model":"robby","input":"hi","stream":true,`+rtools+`}`))
	check("event", call(t, "POST", url+"/v1/responses", "tok", `{"model":"robby","input":"hi","stream":true,`+rtools+`}`))
	srv.Reply(robbytest.Text(`{"n":1}`))
	check("Response", call(t, "POST", url+"/v1/responses", "tok",
		`{"model":"robby","input":"hi","text":{"format":{"type":"json_schema","name":"n","strict":true,"schema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}}}}`))
	srv.Fallback(robbytest.Text("not JSON"))
	check("event", call(t, "POST", url+"/v1/responses", "tok", `{"model":"robby","input":"hi","stream":true,"text":{"format":{"type":"json_object"}}}`))
	check("ErrorResponse", call(t, "POST", url+"/v1/responses", "tok", `{"model":"robby","input":"hi","text":{"format":{"type":"json_object"}}}`))
	id := resp[0].(map[string]any)["id"].(string)
	check("Response", call(t, "GET", url+"/v1/responses/"+id, "tok", ""))
	check("ResponseItemList", call(t, "GET", url+"/v1/responses/"+id+"/input_items", "tok", ""))

	conv := call(t, "POST", url+"/v1/conversations", "tok", `{"metadata":{"k":"v"},"items":[{"role":"user","content":"one"},`+
		`{"type":"function_call","call_id":"c1","name":"lookup","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"two"}]}`)
	check("ConversationResource", conv)
	cid := conv[0].(map[string]any)["id"].(string)
	check("ConversationResource", call(t, "GET", url+"/v1/conversations/"+cid, "tok", ""))
	check("ConversationResource", call(t, "POST", url+"/v1/conversations/"+cid, "tok", `{"metadata":{}}`))
	srv.Fallback(robbytest.Text("Three."))
	check("Response", call(t, "POST", url+"/v1/responses", "tok", `{"model":"robby","input":"hi","conversation":"`+cid+`"}`))
	check("ConversationItemList", call(t, "POST", url+"/v1/conversations/"+cid+"/items", "tok", `{"items":[{"role":"user","content":"four"}]}`))
	items := call(t, "GET", url+"/v1/conversations/"+cid+"/items", "tok", "")
	check("ConversationItemList", items)
	for _, it := range items[0].(map[string]any)["data"].([]any) {
		check("ConversationItem", call(t, "GET", url+"/v1/conversations/"+cid+"/items/"+it.(map[string]any)["id"].(string), "tok", ""))
	}
	first := items[0].(map[string]any)["first_id"].(string)
	check("ConversationResource", call(t, "DELETE", url+"/v1/conversations/"+cid+"/items/"+first, "tok", ""))
	check("ErrorResponse", call(t, "GET", url+"/v1/conversations/"+cid+"/items/"+first, "tok", ""))
	check("DeletedConversationResource", call(t, "DELETE", url+"/v1/conversations/"+cid, "tok", ""))
}
