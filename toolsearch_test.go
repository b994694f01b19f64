package robby_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

type cityArgs struct {
	City string `json:"city" jsonschema:"the city"`
}

// searchAgent is an agent with one tool always offered (clock) and two
// deferred ones (weather, stock_price), whose calls it counts.
type searchAgent struct {
	*robby.Agent
	srv   *robbytest.Server
	mu    sync.Mutex
	calls map[string]int
}

func newSearchAgent(t *testing.T, opts ...robby.Option) *searchAgent {
	t.Helper()
	sa := &searchAgent{srv: robbytest.NewServer(), calls: map[string]int{}}
	t.Cleanup(sa.srv.Close)
	tool := func(name, desc string) robby.Tool {
		return robby.NewTool(name, desc, func(_ context.Context, in cityArgs) (string, error) {
			sa.mu.Lock()
			defer sa.mu.Unlock()
			sa.calls[name]++
			return name + " of " + in.City, nil
		})
	}
	base := []robby.Option{robby.WithBaseURL(sa.srv.URL), robby.WithAPIKey(""), robby.WithModel("m"),
		robby.WithRequestOptions(option.WithMaxRetries(0)),
		robby.WithTools(
			tool("clock", "Tells the time in a city"),
			tool("weather", "Gets the weather forecast of a city: rain, wind and temperatures").Deferred(),
			tool("stock_price", "Gets the price of a company's stock on the exchange").Deferred(),
		)}
	a, err := robby.New(append(base, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	sa.Agent = a
	return sa
}

func (sa *searchAgent) called(name string) int {
	sa.mu.Lock()
	defer sa.mu.Unlock()
	return sa.calls[name]
}

func TestToolSearchOffersWhatItFinds(t *testing.T) {
	var approved []string
	var mu sync.Mutex
	sa := newSearchAgent(t, robby.WithApproval(func(_ context.Context, c robby.ToolCall) error {
		mu.Lock()
		defer mu.Unlock()
		approved = append(approved, c.Name)
		return nil
	}))
	sa.srv.Reply(
		robbytest.ToolCalls(robbytest.Call(robby.SearchToolsName, `{"query":"weather forecast"}`)),
		robbytest.ToolCalls(robbytest.Call("weather", `{"city":"Lyon"}`)),
		robbytest.Text("Rain in Lyon."),
	)
	res, err := sa.Run(t.Context(), "Will it rain in Lyon?")
	require.NoError(t, err)
	assert.Equal(t, "Rain in Lyon.", res.Text)
	assert.Equal(t, 3, res.Turns, "one extra turn: the search")

	reqs := sa.srv.Requests()
	require.Len(t, reqs, 3)
	// Deferred tools are absent until found; then offered at the end of
	// the list, which keeps its start for the provider's prompt cache.
	assert.Equal(t, []string{"clock", robby.SearchToolsName}, reqs[0].Tools)
	assert.Equal(t, []string{"clock", robby.SearchToolsName, "weather"}, reqs[1].Tools)
	assert.Equal(t, []string{"clock", robby.SearchToolsName, "weather"}, reqs[2].Tools)
	var out struct {
		Found []struct{ Name, Description string }
	}
	require.NoError(t, json.Unmarshal([]byte(reqs[1].Messages[2].Content), &out))
	require.NotEmpty(t, out.Found)
	assert.Equal(t, "weather", out.Found[0].Name, "ranked first")
	assert.Equal(t, 1, sa.called("weather"))
	// Approval saw the search and the found tool as any other call.
	assert.Equal(t, []string{robby.SearchToolsName, "weather"}, approved)
	require.Len(t, res.ToolCalls, 2)
	assert.NoError(t, res.ToolCalls[1].Err)

	// A continued conversation keeps what it found, and a clone too.
	sa.srv.Reply(robbytest.Text("Still rain."), robbytest.Text("Clone."))
	_, err = sa.Run(t.Context(), "And tomorrow?")
	require.NoError(t, err)
	_, err = sa.Clone().Run(t.Context(), "And the day after?")
	require.NoError(t, err)
	reqs = sa.srv.Requests()
	assert.Equal(t, []string{"clock", robby.SearchToolsName, "weather"}, reqs[3].Tools)
	assert.Equal(t, []string{"clock", robby.SearchToolsName, "weather"}, reqs[4].Tools)

	// After Reset, nothing was found.
	sa.Reset()
	sa.srv.Reply(robbytest.Text("Hi."))
	_, err = sa.Run(t.Context(), "hello")
	require.NoError(t, err)
	assert.Equal(t, []string{"clock", robby.SearchToolsName}, sa.srv.Requests()[5].Tools)
}

func TestToolSearchRefusesADeferredToolNotFound(t *testing.T) {
	sa := newSearchAgent(t)
	sa.srv.Reply(
		// The model guesses a deferred tool's name, and calls the found one
		// in the turn of its search: neither was offered.
		robbytest.ToolCalls(
			robbytest.Call("stock_price", `{"city":"Paris"}`),
			robbytest.Call(robby.SearchToolsName, `{"query":"weather"}`),
			robbytest.Call("weather", `{"city":"Paris"}`),
		),
		robbytest.Text("I searched."),
	)
	res, err := sa.Run(t.Context(), "Prices and weather?")
	require.NoError(t, err)
	require.Len(t, res.ToolCalls, 3)
	assert.ErrorIs(t, res.ToolCalls[0].Err, robby.ErrDeferredTool)
	assert.Contains(t, res.ToolCalls[0].Output, "call search_tools first")
	assert.NoError(t, res.ToolCalls[1].Err)
	assert.ErrorIs(t, res.ToolCalls[2].Err, robby.ErrDeferredTool)
	assert.Zero(t, sa.called("stock_price"))
	assert.Zero(t, sa.called("weather"))

	// ExecuteToolCalls runs the calls the program chose, deferred or not,
	// as a durable run's tool activity does.
	out, err := sa.ExecuteToolCalls(t.Context(), []robby.ToolCall{{ID: "s", Name: "stock_price", Arguments: `{"city":"ACME"}`}})
	require.NoError(t, err)
	require.NoError(t, out[0].Err)
	assert.Equal(t, "stock_price of ACME", out[0].Output)

	// An unknown tool's error lists the tools offered, not the deferred ones.
	out, err = sa.ExecuteToolCalls(t.Context(), []robby.ToolCall{{ID: "x", Name: "nope", Arguments: "{}"}})
	require.NoError(t, err)
	assert.ErrorIs(t, out[0].Err, robby.ErrUnknownTool)
	assert.True(t, strings.HasSuffix(out[0].Output, "the tools are: clock, search_tools"), out[0].Output)
	assert.NotContains(t, out[0].Output, "stock_price")
}

func TestToolSearchFindsNothing(t *testing.T) {
	sa := newSearchAgent(t)
	sa.srv.Reply(robbytest.ToolCalls(robbytest.Call(robby.SearchToolsName, `{"query":"zebra"}`)), robbytest.Text("None."))
	res, err := sa.Run(t.Context(), "?")
	require.NoError(t, err)
	assert.JSONEq(t, `{"found":[],"note":"No tool matches. Try other words."}`, res.ToolCalls[0].Output)
	assert.Equal(t, []string{"clock", robby.SearchToolsName}, sa.srv.Requests()[1].Tools)
}

func TestToolSearchKeptInAStoredConversation(t *testing.T) {
	store := openStore(t)
	sa := newSearchAgent(t)
	sa.srv.Reply(
		robbytest.ToolCalls(robbytest.Call(robby.SearchToolsName, `{"query":"stock exchange price"}`)),
		robbytest.Text("Found it."),
	)
	_, err := sa.Run(t.Context(), "price of ACME?", robby.WithConversation(store, "u", "c1"))
	require.NoError(t, err)

	// Another agent, as another process would, continues the conversation.
	other := newSearchAgent(t)
	other.srv.Reply(robbytest.ToolCalls(robbytest.Call("stock_price", `{"city":"ACME"}`)), robbytest.Text("42."))
	res, err := other.Run(t.Context(), "so?", robby.WithConversation(store, "u", "c1"))
	require.NoError(t, err)
	assert.Equal(t, "42.", res.Text)
	assert.Equal(t, []string{"clock", robby.SearchToolsName, "stock_price"}, other.srv.Requests()[0].Tools)
	assert.Equal(t, 1, other.called("stock_price"))
}

func TestToolSearchBoundsTheToolsFound(t *testing.T) {
	// 50 deferred tools, each found by a search of its own name.
	srv := robbytest.NewServer()
	t.Cleanup(srv.Close)
	var tools []robby.Tool
	for i := range 50 {
		name := fmt.Sprintf("tool%02d", i)
		tools = append(tools, robby.NewTool(name, "Does thing number "+name, func(context.Context, struct{}) (string, error) {
			return "ok", nil
		}).Deferred())
	}
	a, err := robby.New(robby.WithBaseURL(srv.URL), robby.WithAPIKey(""), robby.WithModel("m"), robby.WithTools(tools...),
		robby.WithMaxTurns(60))
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	for i := range 50 {
		srv.Reply(robbytest.ToolCalls(robbytest.Call(robby.SearchToolsName, fmt.Sprintf(`{"query":"tool%02d"}`, i))))
	}
	srv.Reply(robbytest.Text("done"))
	_, err = a.Run(t.Context(), "find them all")
	require.NoError(t, err)
	last := srv.Requests()[50].Tools
	require.Len(t, last, 1+robby.MaxFoundTools)
	// The last found are kept; the first found dropped out.
	assert.Contains(t, last, "tool49")
	assert.Contains(t, last, fmt.Sprintf("tool%02d", 50-robby.MaxFoundTools))
	assert.NotContains(t, last, fmt.Sprintf("tool%02d", 49-robby.MaxFoundTools))
	assert.True(t, slices.IsSortedFunc(last[1:], strings.Compare), "in the order found: %v", last)
}

func TestToolSearchNameTaken(t *testing.T) {
	clash := robby.NewTool(robby.SearchToolsName, "mine", func(context.Context, struct{}) (string, error) { return "", nil })
	deferred := robby.NewTool("x", "x", func(context.Context, struct{}) (string, error) { return "", nil }).Deferred()
	_, err := robby.New(robby.WithModel("m"), robby.WithTools(clash, deferred))
	require.ErrorContains(t, err, "the name of the tool search")
	// Without deferred tools, the name is free.
	a, err := robby.New(robby.WithModel("m"), robby.WithTools(clash))
	require.NoError(t, err)
	a.Close()
}
