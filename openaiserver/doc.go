// Package openaiserver serves robby agents as an OpenAI-compatible endpoint. Any
// chat front end or OpenAI SDK can talk to them, while their tools run on the
// server. It complements the root package, whose agents are clients of such
// endpoints.
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
// It speaks two of OpenAI's APIs. Chat completions (POST /v1/chat/completions)
// are stateless: the client sends the whole conversation each time. Responses
// (POST /v1/responses) can be kept. With a [robby.Store], each response is stored
// as a conversation of the user its bearer token names. The next request sends
// only its new input and previous_response_id. GET and DELETE /v1/responses/{id}
// read and delete a response. GET /v1/responses/{id}/input_items lists what came
// before it. POST /v1/responses/{id}/cancel stops its run. A user never sees
// another's responses.
//
// The endpoint uses robby's exported API only. Each request's conversation is a
// fresh [robby.Agent.Clone] given the client's messages. It runs with
// [robby.WithRunParams] (the client's parameters over the agent's) and
// [robby.WithCallerTools]. Calls of the client's function tools end the run and
// go back to the client in [robby.Result.Pending].
//
// A traced agent ([robby.WithTracerProvider]) joins its client's trace. The run's
// span is a child of the one named by the request's traceparent header, unless
// the request's context already holds a span of the server's own.
//
// Each route's wire types live in a file of their own (wire_chat.go,
// wire_responses.go, wire_models.go). The endpoint reads and writes OpenAI's JSON
// itself, and shares no wire type with robby's client.
//
// # Responses
//
// The endpoint serves the subset of the Responses API that carries server-side
// state:
//
//   - input as a string or as items: messages with text and image parts,
//     function_call and function_call_output items;
//   - instructions: a system message for that response only, as OpenAI's;
//   - the client's function tools. Their calls end the response as function_call
//     items, and the next request gives their outputs. As in chat completions,
//     input holds calls and outputs of the client's tools only. Only the model
//     calls the agent's tools: such an item is refused with 400;
//   - temperature, top_p, max_output_tokens, parallel_tool_calls, store (default
//     true) and previous_response_id;
//   - text.format: structured output. A json_schema format (with its name,
//     description and strict) or json_object becomes the model request's
//     response_format, as the client gave it. The answer is checked as a typed
//     run's ([robby.WithAnswerSchema]). One that does not fit goes back to the
//     model to be repaired. A model that takes no response_format answers
//     through a final_answer tool, or a prompt. The output is the answer alone.
//     An answer that never fits fails the response with the code
//     invalid_answer, naming what is wrong. The response echoes text, as
//     OpenAI's does;
//   - conversation: the response runs in a conversation of the Conversations
//     API (below). The model reads its items, then the input. The input is
//     appended to it at once, the output when the run ends. Such a response
//     is kept in its conversation only: it is not read back by its own ID.
//
// A team's root ([robby.WithTeam]) answers as any agent. Each output item has
// one field OpenAI's have not: "agent", the name of the team's agent that
// wrote it ([robby.Result.Agents]), in the response as POST and GET return it,
// in the stream's output_item.added and output_item.done ([robby.Event.Agent])
// and in response.completed.
//
// A response is streamed or not, or runs in the background. A stream sends
// response.created and response.in_progress at once, before the model is asked,
// so the client has the response's ID. Then come response.output_item.added,
// response.content_part.added, response.output_text.delta and .done,
// response.content_part.done, response.function_call_arguments.delta and .done,
// and response.output_item.done. It ends with response.completed, or
// response.incomplete when the agent ran out of turns or budget. A failed run,
// even one that fails at once, ends with an error event and response.failed.
//
// A background response ("background": true, kept, not streamed) is answered at
// once, "in_progress". Its run goes on in the handler's process. The client polls
// it with GET; cancel or [Handler.Close] stops it. With [Options.Background], it
// runs on a runner (durable workflows) that outlives the handler.
//
// Built-in tools (web search, files, ...), prompt, reasoning, max_tool_calls,
// top_logprobs, a tool_choice other than "auto" and a text.verbosity other than
// "medium" are refused with 400, naming the member. Other parameters (user,
// include, ...) are accepted and change nothing.
//
// # Conversations
//
// The Conversations API shows each user's stored conversations, with a
// [robby.Store]: POST /v1/conversations (with up to 20 items and metadata),
// GET, POST (its metadata) and DELETE /v1/conversations/{id}, GET and POST
// /v1/conversations/{id}/items, GET and DELETE
// /v1/conversations/{id}/items/{item_id}. Items are paged as input items are.
// A conversation is a robby.Conversation: those of stored responses and of the
// chat page are conversations too. A user never sees another's: they are
// answered 404. Stored messages never change, so a deleted item is recorded in
// the conversation's metadata. It is left out of the items, and of what the
// model reads. A deleted function call is left out with its output, and an
// output with its call. The metadata a client sees leaves out the endpoint's
// own keys (those starting with "openaiserver.").
//
// A stored response reads back (GET) as its creator last saw it. Its record holds
// its status, usage, instructions, previous_response_id, parameters and metadata,
// kept in its conversation's [robby.Conversation.Metadata]. The status is
// "in_progress" while its run goes on, then "completed", "incomplete", "failed"
// with its error, or "cancelled" when the client went away mid-run. Its output is
// read from the stored messages.
//
// While its run goes on, its server rewrites that record every
// [Options.Heartbeat] (10 s by default). Say a response still reads
// "in_progress", its conversation was not written for three heartbeats, and this
// server does not run it. Then its server stopped during its run (it crashed, or
// was cut from its store). Such a response reads "failed" with a server_error.
//
// A background response run by [Options.Background] is the exception. Its run
// went on without its server, so the server that reads it takes it over. It
// heartbeats the record, waits for the run, saves its messages and records its
// end. The response reads "in_progress" until the run ends. Several servers may
// take one over at once. Each appends the run's messages expecting the count of
// messages before them ([robby.Store.Append]). One writes them; the others are
// refused with [robby.ErrConflict] and find them written. All record the same
// end.
//
// Its input items (GET /v1/responses/{id}/input_items) are the conversation's
// messages before its output. They are paged with limit, order and after, as
// OpenAI's. They hold the earlier responses' input and output and its own input.
// They leave out the agent's own tool calls and results, as its output does.
//
// Cancel stops a stored response whose run goes on in this process. A streamed
// response's ID comes in response.created. On cancel the run's context ends, and
// what it saved stays. Its stream closes the open message and ends (OpenAI has no
// event for it). The response then reads "cancelled". A background response run
// by [Options.Background] may be cancelled on any server. Its run is cancelled on
// the runner; the server waits for it to end and records it. A response that has
// ended, or that another replica runs in its own process, is refused with 400.
package openaiserver
