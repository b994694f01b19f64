// Package openaiserver serves robby agents as an OpenAI-compatible
// endpoint, so that any chat front end or OpenAI SDK can talk to them while
// their tools run on the server: it complements the root package, whose
// agents are clients of such endpoints.
//
//	agent, err := robby.New(robby.WithModel("ai/qwen2.5"), robby.WithTools(...))
//	...
//	h := openaiserver.New(map[string]*robby.Agent{"robby": agent},
//		openaiserver.Options{Token: os.Getenv("ROBBY_TOKEN")})
//	err = http.ListenAndServe("127.0.0.1:8080", h)
//
// The endpoint is built on robby's exported API only: each request's
// conversation is a fresh [robby.Agent.Clone] given the client's messages,
// run with [robby.WithRunParams] (the client's parameters over the
// agent's) and [robby.WithCallerTools] (the client's function tools, whose
// calls end the run and go back to the client in [robby.Result.Pending]).
//
// Each route's wire types live in a file of their own (wire_chat.go,
// wire_models.go): the endpoint reads and writes OpenAI's JSON itself, and
// shares no wire type with robby's client.
package openaiserver
