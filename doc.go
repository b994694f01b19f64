// Package robby embeds an LLM agent in a Go program. The agent is a model
// that calls tools in a loop until the job is done. It works over any
// OpenAI-compatible chat-completions endpoint (OpenAI, Docker Model Runner,
// Ollama, llama.cpp's server, vLLM, LM Studio, Gemini, ...).
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
// [New] builds an [Agent] from functional options. The endpoint comes from
// [WithBaseURL] and [WithAPIKey], or OPENAI_BASE_URL and OPENAI_API_KEY, or
// a client of your own given with [WithClient]. [WithModel] sets the model,
// [WithSystem] a system prompt, [WithParams] the base request and
// [WithTools] the tools. [WithMaxTurns], [WithMaxToolCallsPerTurn],
// [WithToolTimeout] and [WithFinalAnswer] set the loop's limits.
//
// [Agent.Run] is the ReAct loop. It sends the conversation to the model and
// runs the tools it calls, concurrently within the limits. It sends their
// results back and repeats until the model answers. The [Result] tells the
// answer, the tool calls with their outcome and duration, and the tokens
// used ([Usage]). [Usage] counts cached prompt tokens and reasoning tokens
// apart, where the provider reports them. It also gives their cost at the
// prices of [WithPrices]. [Agent.Usage] sums a conversation's usage.
//
// # Run options and caller-run tools
//
// A [RunOption] changes one run. [WithRunParams] lays request parameters over
// the agent's. [WithRunSystem] adds a system message the conversation does
// not keep. [WithCallerTools] offers tools that the caller runs itself, such
// as a question a person answers later. A call of one ends the run without
// error, with the calls in [Result.Pending]. The program gives their results
// with [WithToolResults] to [Agent.Resume] (or [Agent.ResumeStream]), which
// continues the run. The conversation holds the pending calls, so another
// agent given the saved messages ([Agent.SetMessages]) can resume the run. A
// call never answered gets a result saying so before the next turn. Every
// tool call in the conversation thus has exactly one result.
//
// # Tools
//
// [NewTool] makes a tool of a typed Go function. The JSON Schema of its
// arguments is inferred from the input type. The model's arguments are
// validated against it before the call, and the output is sent back as JSON.
// [FuncTool] takes a schema and an untyped function instead. A tool may
// fail, panic, take too long, or be called with bad arguments or a wrong
// name. Then the model gets an error message it can act on. The loop goes
// on, and every tool call gets exactly one result.
//
// # Streaming
//
// [Agent.Stream] runs the same loop as an iterator of [Event] values. It yields
// text and reasoning deltas as they arrive, each tool call and its result,
// and the end of each turn. A last [EventDone] event carries the [Result].
// Breaking out of the loop stops the run and releases everything.
//
// Providers stream tool calls in different shapes: with or without index or
// id, whole or in fragments, with provider fields that must be sent back.
// Robby assembles each into a complete call. It reports the fragments of its
// arguments as they arrive ([EventToolCallDelta]). The events of an agent
// used as a tool ([Agent.AsTool]) come wrapped in [EventAgent] events naming
// the call.
//
// # Memory
//
// An agent keeps its conversation: a second Run continues the first.
// [Agent.Messages], [Agent.AddMessages], [Agent.SetMessages] and
// [Agent.Reset] read and change it. Each turn is added whole, once its tools
// have run. So the conversation never holds a tool call without its result.
// The building blocks [Agent.ChatCompletion], [Agent.ChatCompletionStream],
// [Agent.ToolsCompletion] and [Agent.ExecuteToolCalls] do one step each.
// They keep the conversation as the loop would.
//
// A [Store] keeps conversations beyond the process, per user. Package
// sqlitestore keeps them in one file, package pgstore in PostgreSQL. A run
// given [WithConversation] starts from the stored conversation. It saves
// each message as it happens, so a crash loses nothing that was saved. The
// next run finishes the calls it interrupted ([Tool.Idempotent],
// [ErrInterrupted]).
//
// # Long conversations
//
// With [WithCompaction], each request is fitted into the model's context
// window, less room for the answer. The oldest whole turns are left out
// ([DropOldestTurns]), summed up by the model ([SummarizeOldTurns]) or
// chosen by a function of yours ([CompactWith]). A provider's context-length
// error leads to one compaction and retry before it surfaces as a
// [*ContextLengthError]. The conversation keeps every message.
// [EventCompaction] reports each compaction.
//
// # Errors
//
// Errors from the endpoint are of type [*APIError]. They carry the HTTP
// status and the provider's own message, whatever the shape of its error
// body. The [*openai.Error] they wrap is reachable with [errors.As].
// openai-go retries 408, 409, 429 and 5xx answers, honouring Retry-After. A
// run that reaches its turn limit returns [ErrMaxTurns] with its partial
// result. A run that reaches a limit of its [WithBudget] returns a
// [*BudgetError]. A provider's context-length error is a
// [*ContextLengthError] that names the sizes. It matches [ErrContextLength].
//
// # Tracing and metrics
//
// [WithTracerProvider] and [WithMeterProvider] report the agent's work to
// OpenTelemetry, in the GenAI semantic conventions. Each run gets an
// invoke_agent span. Each model call gets a chat span (models, finish
// reasons, tokens, server), and each tool call an execute_tool span. Errors
// are marked with a low-cardinality error.type. The histograms are
// gen_ai.client.token.usage, gen_ai.client.operation.duration (and
// time_to_first_chunk) and robby.tool.duration. The counter robby.runs
// counts runs by outcome. The trace context goes with every request to the
// model and to MCP servers. Prompts and answers stay out of the spans unless
// [WithTracedContent] is given. Secrets never enter them. Without a
// provider, nothing is recorded and a run costs what it did.
//
// # Typed answers
//
// [RunTyped] ends the loop with a Go value instead of text. The answer's
// JSON Schema is inferred from its type, as for [NewTool]. The model's
// answer is validated and decoded strictly. A faulty answer is sent back
// with what is wrong, a bounded number of times ([WithMaxRepairs]). Then the
// run fails with an [*AnswerError]. The answer is asked for as the endpoint
// allows ([AnswerMode]): natively with response_format, through a
// final-answer tool, or by prompt. [StreamTyped] streams the run with the
// answer's partial values as they fill in.
//
// # Concurrency
//
// An [Agent] is safe for concurrent use. Operations that talk to the model
// take turns on its conversation. For independent conversations over the
// same configuration and tools, use [Agent.Clone], which is cheap.
//
// # Testing
//
// Package [github.com/robby-go/robby/robbytest] provides a scripted
// OpenAI-compatible server, to test agents offline.
package robby
