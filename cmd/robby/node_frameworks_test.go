package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// frameworksModel is the scripted model behind robby in
// TestNodeFrameworks. It says hello, calls get_weather when offered it and
// reads its result, knows a name said earlier, and answers structured
// output, however it is asked for, with Paris.
func frameworksModel(req robbytest.Request) robbytest.Reply {
	last := req.Messages[len(req.Messages)-1]
	said := func(text string) bool {
		return slices.ContainsFunc(req.Messages, func(m robbytest.Message) bool { return strings.Contains(m.Content, text) })
	}
	switch {
	case robbytest.AsksJSONSchema(req) || strings.Contains(string(req.ResponseFormat), "json_object") ||
		slices.Contains(req.Tools, "final_answer") || slices.Contains(req.Tools, "city"):
		return robbytest.Answer(`{"city":"Paris","country":"France"}`)
	case last.Role == "tool":
		return robbytest.Text("It is sunny in " + last.Content + ".")
	case slices.Contains(req.Tools, "get_weather"):
		return robbytest.ToolCalls(robbytest.Call("get_weather", `{"city":"Paris"}`))
	case strings.Contains(last.Content, "What is my name?") && said("My name is Ada."):
		return robbytest.Text("Your name is Ada.")
	case strings.Contains(last.Content, "What is my name?"):
		return robbytest.Text("I do not know your name.")
	}
	return robbytest.Text("Hello from robby.")
}

// TestNodeFrameworks: the agent frameworks people point at OpenAI work
// unchanged against `robby serve -store`, on the Responses API and on
// chat completions: OpenAI's Agents SDK (plain, a function tool,
// streaming, a second turn, structured output with a zod schema, an
// OpenAIConversationsSession across two runs), the Vercel AI SDK with
// @ai-sdk/openai (generateText, streamText, a tool loop, generateObject)
// and LangChain's @langchain/openai (invoke, stream, bindTools,
// withStructuredOutput). See testdata/node_frameworks.mjs; the packages
// are pinned in .ci/install-mcp.sh.
func TestNodeFrameworks(t *testing.T) {
	bench := requireNodeSDK(t)
	modules := filepath.Join(filepath.Dir(filepath.Dir(bench.sdk)), "..", "agents", "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "@openai", "agents", "package.json")); err != nil {
		benchMissing(t, "the agent frameworks are not installed: %v", err)
	}
	const model = "robby-agent"
	srv := upstream(t)
	srv.Fallback(robbytest.Func(frameworksModel))
	base, serveLog := serveInProcess(t, "-base-url", srv.URL, "-model", model, "-store", filepath.Join(t.TempDir(), "robby.db"),
		"-token", "ada:ada-token")
	_, steps := bench.run(t, serveLog, []string{"OPENAI_API_KEY=ada-token", "FRAMEWORKS=" + modules}, "node_frameworks.mjs", base, model)

	passed := map[string]int{}
	for _, name := range []string{"agents/responses", "agents/chat_completions", "aisdk/responses", "aisdk/chat",
		"langchain/responses", "langchain/chat"} {
		var scenarios []string
		for step := range steps {
			if strings.HasPrefix(step, name+"/") {
				scenarios = append(scenarios, step)
			}
		}
		slices.Sort(scenarios)
		for _, s := range scenarios {
			var r struct {
				OK    bool
				Got   json.RawMessage
				Error string
			}
			require.NoError(t, json.Unmarshal(steps[s], &r))
			if assert.True(t, r.OK, "%s: %s", s, r.Error) {
				passed[name]++
			}
		}
	}
	assert.Equal(t, map[string]int{"agents/responses": 6, "agents/chat_completions": 6, "aisdk/responses": 4, "aisdk/chat": 4,
		"langchain/responses": 4, "langchain/chat": 4}, passed, "the scenarios that passed, per framework and API")
}
