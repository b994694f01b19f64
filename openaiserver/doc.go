// Package openaiserver serves robby agents as an OpenAI-compatible
// endpoint, so that any chat front end or OpenAI SDK can talk to them while
// their tools run on the server: it complements the root package, whose
// agents are clients of such endpoints.
//
//	agent, err := robby.New(robby.WithModel("ai/qwen2.5"), robby.WithTools(...))
//	...
//	store, err := sqlitestore.Open(ctx, "responses.db") // to keep responses
//	...
//	h := openaiserver.New(map[string]*robby.Agent{"robby": agent}, openaiserver.Options{
//		Tokens: map[string]string{os.Getenv("ALICE_TOKEN"): "alice", os.Getenv("BOB_TOKEN"): "bob"},
//		Store:  store,
//	})
//	err = http.ListenAndServe("127.0.0.1:8080", h)
//
// It speaks two of OpenAI's APIs. Chat completions (POST
// /v1/chat/completions) are stateless: the client sends the whole
// conversation each time. Responses (POST /v1/responses) can be kept: with
// a [robby.Store], each response is stored as a conversation of the user
// its bearer token names, and the next request sends only its new input
// and previous_response_id; GET and DELETE /v1/responses/{id} read and
// delete it, GET /v1/responses/{id}/input_items lists what came before it
// and POST /v1/responses/{id}/cancel stops its run. A user never sees
// another's responses.
//
// The endpoint is built on robby's exported API only: each request's
// conversation is a fresh [robby.Agent.Clone] given the client's messages,
// run with [robby.WithRunParams] (the client's parameters over the
// agent's) and [robby.WithCallerTools] (the client's function tools, whose
// calls end the run and go back to the client in [robby.Result.Pending]).
//
// A traced agent ([robby.WithTracerProvider]) joins its client's trace:
// the run's span is a child of the one the request's traceparent header
// names, unless the request's context already holds a span of the
// server's own.
//
// Each route's wire types live in a file of their own (wire_chat.go,
// wire_responses.go, wire_models.go): the endpoint reads and writes
// OpenAI's JSON itself, and shares no wire type with robby's client.
//
// # Responses
//
// The subset of the Responses API that carries server-side state: input
// as a string or as items (messages with text and image parts,
// function_call and function_call_output items), instructions (a system
// message for that response only, as OpenAI's), function tools of the
// client's (their calls end the response as function_call items; the
// next request gives their outputs: input holds calls and outputs of the
// client's tools only, as messages of chat completions do; only the model
// calls the agent's tools, and such an item is refused with 400),
// temperature, top_p,
// max_output_tokens, parallel_tool_calls, store (default true) and
// previous_response_id; streamed (the events response.created and
// response.in_progress at once, before the model is asked, so that the
// client has the response's ID, then response.output_item.added,
// response.content_part.added, response.output_text.delta and .done,
// response.content_part.done, response.function_call_arguments.delta and
// .done, response.output_item.done, then response.completed, or
// response.incomplete when the agent ran out of turns or budget, or an
// error event and response.failed when the run failed, even at once) or
// not; or in the background ("background": true, for a kept response not
// streamed): answered at once, "in_progress", the run going on in the
// handler's process, to be polled with GET and stopped by cancel or by
// [Handler.Close]. Built-in tools (web search, files, ...), conversation, prompt,
// reasoning, max_tool_calls, top_logprobs, a tool_choice other than "auto"
// and a text format other than plain text are refused with 400; other
// parameters (user, include, ...) are accepted and change nothing.
//
// A stored response reads back (GET) as its creator last saw it: its
// status ("in_progress" while its run goes on, then "completed",
// "incomplete", "failed" with its error, or "cancelled" when the client
// went away mid-run), usage, instructions, previous_response_id,
// parameters and metadata, kept in its conversation's
// [robby.Conversation.Metadata]; its output is read from the stored
// messages. While its run goes on, its server rewrites that record every
// [Options.Heartbeat] (10 s by default); a response still "in_progress"
// whose conversation was not written for three heartbeats, and that this
// server does not run, is one whose server stopped during its run
// (crashed, or cut from its store), and reads "failed" with a
// server_error. Its input items (GET /v1/responses/{id}/input_items,
// paged with limit, order and after as OpenAI's) are the conversation's
// messages before its output: the earlier responses' input and output and
// its own input, without the agent's own tool calls and results, which
// its output leaves out too.
//
// Cancel stops a stored response whose run goes on in this process (a
// streamed one: its ID comes in response.created): the run's context ends,
// what it saved stays, its stream closes the open message and ends (OpenAI
// has no event for it), and the response reads "cancelled". A response
// that has ended, or that another replica runs, is refused with 400.
package openaiserver
