// Package a2atest serves an agent over A2A for tests, on the protocol's own
// Go server (a2a-go's a2asrv), so that clients meet the real wire format.
package a2atest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// Serve serves executor as the agent named name over JSON-RPC, with its card
// at the well-known path, until the test ends. It refuses a request, the
// card's included, without the header "Authorization: Bearer token".
func Serve(t testing.TB, name, description, token string, executor a2asrv.AgentExecutor) *httptest.Server {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	card := &a2a.AgentCard{Name: name, Description: description, Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srv.URL+"/rpc", a2a.TransportProtocolJSONRPC)},
		Capabilities:        a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"}}
	auth := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+token {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	mux.Handle(a2asrv.WellKnownAgentCardPath, auth(a2asrv.NewStaticAgentCardHandler(card)))
	mux.Handle("/rpc", auth(a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(executor))))
	return srv
}
