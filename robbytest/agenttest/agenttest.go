// Package agenttest builds agents on robbytest's scripted model, for the
// tests of code that serves or drives a [robby.Agent]. Each fixture is
// closed when its test ends.
//
//	srv := agenttest.NewServer(t, robbytest.Text("Hello."))
//	agent := agenttest.New(t, srv, robby.WithSystem("Be brief."))
//
// It is a package of its own because robbytest cannot import robby: the
// root package's own tests import robbytest.
package agenttest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/option"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/sqlitestore"
)

// Model is the model the agents of [New] ask for.
const Model = "test-model"

// NewServer starts a scripted model that gives replies, closed when the test
// ends. More replies can be queued with [robbytest.Server.Reply].
func NewServer(t testing.TB, replies ...robbytest.Reply) *robbytest.Server {
	t.Helper()
	srv := robbytest.NewServer()
	t.Cleanup(srv.Close)
	srv.Reply(replies...)
	return srv
}

// New builds an agent on srv, closed when the test ends. It asks for [Model]
// with no API key, and does not retry: a test of a failure sees the first
// answer. opts follow those and may override them. An option that fails
// fails the test.
func New(t testing.TB, srv *robbytest.Server, opts ...robby.Option) *robby.Agent {
	t.Helper()
	base := []robby.Option{robby.WithBaseURL(srv.URL), robby.WithAPIKey(""), robby.WithModel(Model),
		robby.WithRequestOptions(option.WithMaxRetries(0))}
	a, err := robby.New(append(base, opts...)...)
	if err != nil {
		t.Fatalf("agenttest: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// NewStore opens a SQLite store in the test's temporary directory, closed
// when the test ends.
func NewStore(t testing.TB) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "robby.db"))
	if err != nil {
		t.Fatalf("agenttest: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// NewTeam builds a team of two on one scripted model, closed when the test
// ends, and returns its root: triage, which hands every question over to
// billing ("transfer_to_billing", reason "a refund"), and billing, which
// answers "Order 7 is refunded.". The model tells them by their system
// prompts.
func NewTeam(t testing.TB) *robby.Agent {
	t.Helper()
	srv := NewServer(t)
	srv.Fallback(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		if strings.Contains(req.Messages[0].Content, "route") {
			return robbytest.ToolCalls(robbytest.Call("transfer_to_billing", `{"reason":"a refund"}`))
		}
		return robbytest.Text("Order 7 is refunded.")
	}))
	billing := New(t, srv, robby.WithName("billing"), robby.WithDescription("Refunds"), robby.WithSystem("You handle refunds."))
	return New(t, srv, robby.WithName("triage"), robby.WithSystem("You route the user."),
		robby.WithHandoffs(robby.Handoff{To: "billing"}), robby.WithTeam(billing))
}
