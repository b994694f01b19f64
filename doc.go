// Package robby embeds an LLM agent in a Go program: a model that calls
// tools in a loop until the job is done, over any OpenAI-compatible
// chat-completions endpoint (OpenAI, Docker Model Runner, Ollama,
// llama.cpp's server, vLLM, LM Studio, Gemini, ...).
//
//	type hello struct {
//		Name string `json:"name" jsonschema:"who to greet"`
//	}
//
//	func main() {
//		sayHello := robby.NewTool("say_hello", "Say hello to someone",
//			func(ctx context.Context, in hello) (string, error) {
//				return "👋 Hello " + in.Name + "!", nil
//			})
//		agent, err := robby.New(
//			robby.WithBaseURL("http://localhost:12434/engines/v1"), // Docker Model Runner
//			robby.WithModel("ai/qwen2.5"),
//			robby.WithTools(sayHello),
//		)
//		if err != nil {
//			log.Fatal(err)
//		}
//		defer agent.Close()
//		res, err := agent.Run(context.Background(), "Say hello to Bob")
//		if err != nil {
//			log.Fatal(err)
//		}
//		fmt.Println(res.Text)
//	}
//
// # The agent
//
// [New] builds an [Agent] from functional options: the endpoint
// ([WithBaseURL], [WithAPIKey], or OPENAI_BASE_URL and OPENAI_API_KEY, or a
// client of your own with [WithClient]), the model ([WithModel]), a system
// prompt ([WithSystem]), the base request ([WithParams]), the tools
// ([WithTools]) and the loop's limits ([WithMaxTurns],
// [WithMaxToolCallsPerTurn], [WithToolTimeout], [WithFinalAnswer]).
//
// [Agent.Run] is the ReAct loop: it sends the conversation to the model,
// runs the tools it calls (concurrently, within the limits), sends their
// results back, and repeats until the model answers. The [Result] tells the
// answer, the tool calls with their outcome and duration, and the tokens
// used ([Usage]: cached prompt tokens and reasoning tokens apart, where the
// provider says them, and their cost at the prices of [WithPrices]);
// [Agent.Usage] sums a conversation's.
//
// # Run options and caller-run tools
//
// [RunOption]s change one run: [WithRunParams] lays request parameters
// over the agent's; [WithRunSystem] adds a system message the conversation
// does not keep; [WithCallerTools] offers tools that the caller runs
// itself, such as a question a person answers later. A call of one ends
// the run, without error, with the calls in [Result.Pending]; the program
// gives their results with [WithToolResults] to [Agent.Resume] (or
// [Agent.ResumeStream]), which continues the run. The conversation holds
// the pending calls, so a run can be resumed by another agent given the
// saved messages ([Agent.SetMessages]); a call never answered gets a
// result saying so before the next turn, so every tool call in the
// conversation has exactly one result.
//
// # Tools
//
// [NewTool] makes a tool of a typed Go function: the JSON Schema of its
// arguments is inferred from the input type, the model's arguments are
// validated against it before the call, and the output is sent back as
// JSON. [FuncTool] takes a schema and an untyped function instead. A tool
// that fails, panics, takes too long, or is called with bad arguments or
// a wrong name gives the model an error message it can act on: the loop
// goes on, and every tool call gets exactly one result.
//
// # Streaming
//
// [Agent.Stream] runs the same loop as an iterator of [Event]s: text and
// reasoning deltas as they arrive, each tool call and its result, the end of
// each turn, and a last [EventDone] event with the [Result]. Breaking out of
// the loop stops the run and releases everything.
//
// Providers stream tool calls in different shapes (with or without index
// or id, whole or in fragments, with provider fields that must be sent
// back); robby assembles each into a complete call, and reports the
// fragments of its arguments as they arrive ([EventToolCallDelta]). The
// events of an agent used as a tool ([Agent.AsTool]) come wrapped in
// [EventAgent] events naming the call.
//
// # Memory
//
// An agent keeps its conversation: a second Run continues the first.
// [Agent.Messages], [Agent.AddMessages], [Agent.SetMessages] and
// [Agent.Reset] read and change it. Each turn is added whole, once its tools
// have run, so the conversation never holds a tool call without its result.
// The building blocks [Agent.ChatCompletion], [Agent.ChatCompletionStream],
// [Agent.ToolsCompletion] and [Agent.ExecuteToolCalls] do one step each and
// keep the conversation as the loop would.
//
// A [Store] keeps conversations beyond the process, per user: packages
// sqlitestore (one file) and pgstore (PostgreSQL). A run given
// [WithConversation] starts from the stored conversation and saves each
// message as it happens, so a crash loses nothing that was saved, and the
// next run finishes the calls it interrupted ([Tool.Idempotent],
// [ErrInterrupted]).
//
// # Long conversations
//
// With [WithCompaction], each request is fitted into the model's context
// window less room for the answer: the oldest whole turns are left out
// ([DropOldestTurns]), summed up by the model ([SummarizeOldTurns]) or
// chosen by a function of yours ([CompactWith]), and a provider's
// context-length error leads to one compaction and retry before it
// surfaces as a [*ContextLengthError]. The conversation keeps every
// message; [EventCompaction] reports each compaction.
//
// # Errors
//
// Errors from the endpoint are [*APIError]s carrying the HTTP status and the
// provider's own message, whatever the shape of its error body; the
// [*openai.Error] they wrap is reachable with [errors.As]. openai-go retries
// 408, 409, 429 and 5xx answers, honouring Retry-After. A run that reaches
// its turn limit returns [ErrMaxTurns] with its partial result, and one
// that reaches a limit of its [WithBudget] a [*BudgetError]. A
// provider's context-length error is a [*ContextLengthError], matching
// [ErrContextLength], that names the sizes.
//
// # Tracing and metrics
//
// [WithTracerProvider] and [WithMeterProvider] report the agent's work to
// OpenTelemetry in the GenAI semantic conventions: an invoke_agent span for
// each run, a chat span for each model call (models, finish reasons,
// tokens, server) and an execute_tool span for each tool call, errors
// marked with a low-cardinality error.type; the histograms
// gen_ai.client.token.usage, gen_ai.client.operation.duration (and
// time_to_first_chunk) and robby.tool.duration, and the counter robby.runs
// by outcome. The trace
// context goes with every request to the model and to MCP servers.
// Prompts and answers stay out of the spans unless [WithTracedContent] is
// given, and secrets never enter them. Without a provider, nothing is
// recorded and a run costs what it did.
//
// # Typed answers
//
// [RunTyped] ends the loop with a Go value instead of text: the answer's
// JSON Schema is inferred from its type as for [NewTool], the model's
// answer is validated and decoded strictly, and a faulty answer is sent
// back with what is wrong, a bounded number of times ([WithMaxRepairs]),
// before an [*AnswerError]. The answer is asked for as the endpoint allows
// ([AnswerMode]): natively with response_format, through a final-answer
// tool, or by prompt. [StreamTyped] streams the run with the answer's
// partial values as they fill in.
//
// # Concurrency
//
// An [Agent] is safe for concurrent use. Operations that talk to the model
// take turns on its conversation; for independent conversations over the
// same configuration and tools, use [Agent.Clone], which is cheap.
//
// # Testing
//
// Package [github.com/robby-go/robby/robbytest] provides a scripted
// OpenAI-compatible server, to test agents offline.
package robby
