package robby

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/openai/openai-go/v3"
	"github.com/robby-go/robby/internal/bm25"
	"github.com/robby-go/robby/internal/trunc"
)

// Tool search: deferred tools are not sent with each request. The model
// gets one tool, search_tools, which ranks them by BM25 over their names,
// descriptions and parameter names. The tools it finds are offered from
// the next request on. What was found is read back from the conversation
// itself (the search results it holds), so a stored, cloned or continued
// conversation keeps its tools with no state of its own.

// SearchToolsName is the name of the tool that finds deferred tools
// ([Tool.Deferred], [MCPServer.WithDeferLoading]). The agent offers it when
// it has any deferred tool.
const SearchToolsName = "search_tools"

// Bounds of tool search.
const (
	// MaxFoundTools bounds the deferred tools a conversation offers: those
	// found most recently. A tool found long ago may drop out; the model
	// finds it again with another search.
	MaxFoundTools = 32
	// searchResults is how many tools one search returns at most.
	searchResults = 5
	// indexedBytes bounds what is indexed of a description: a server
	// controls its size.
	indexedBytes = 4 << 10
	// shownDescription bounds a description in a search's result. The
	// whole one comes with the tool's definition in the next request.
	shownDescription = 300
)

// Deferred returns a copy of t that is not sent to the model with every
// request. The agent offers [SearchToolsName] instead, which finds deferred
// tools by their names, descriptions and parameter names. A tool it found
// is offered from the conversation's next request on, as any other: its
// calls go through approval, middleware, budgets and telemetry alike.
//
// A call of a deferred tool that no search of the run's conversation found
// is not run. The model reads an error wrapping [ErrDeferredTool] and asks
// search_tools: it has not seen the tool's schema, so its arguments would
// be a guess. [Agent.ExecuteToolCalls] runs the calls a program chose,
// deferred or not.
func (t Tool) Deferred() Tool {
	t.deferred = true
	return t
}

// IsDeferred reports whether t was marked [Tool.Deferred], or belongs to an
// MCP server given [MCPServer.WithDeferLoading].
func (t Tool) IsDeferred() bool { return t.deferred }

// WithDeferLoading makes every tool of the server deferred ([Tool.Deferred]):
// the model finds them with [SearchToolsName]. Claude calls this
// defer_loading; an mcpServers file says "deferLoading": true.
func (s MCPServer) WithDeferLoading() MCPServer { s.deferred = true; return s }

// toolSearch is what a toolset needs to offer search_tools: the deferred
// tools, their index built at the first search, their definitions encoded
// when first offered.
type toolSearch struct {
	deferred []*Tool
	defs     map[string]func() (json.RawMessage, error)
	index    func() *bm25.Index
}

// addSearch adds search_tools to ts if it has deferred tools. Their
// definitions are left out of ts.raw.
func (ts *toolset) addSearch() error {
	s := &toolSearch{defs: map[string]func() (json.RawMessage, error){}}
	var servers []string
	for _, name := range ts.names {
		t := ts.byName[name]
		if !t.deferred {
			continue
		}
		s.deferred = append(s.deferred, t)
		s.defs[name] = sync.OnceValues(t.definition)
		if t.mcpServer != "" && !slices.Contains(servers, t.mcpServer) {
			servers = append(servers, t.mcpServer)
		}
	}
	if len(s.deferred) == 0 {
		return nil
	}
	if ts.byName[SearchToolsName] != nil {
		return fmt.Errorf("robby: tool %q: the name of the tool search, which the deferred tools need", SearchToolsName)
	}
	s.index = sync.OnceValue(func() *bm25.Index { return indexTools(s.deferred) })
	search := s.tool(servers)
	raw, err := search.definition()
	if err != nil {
		return err
	}
	ts.search = s
	ts.byName[SearchToolsName] = &search
	ts.names = append(ts.names, SearchToolsName)
	slices.Sort(ts.names)
	ts.raw = append(ts.raw, raw)
	return nil
}

// indexTools indexes each tool's name (weighing twice, as a heading does
// in the knowledge base), description and parameter names.
func indexTools(tools []*Tool) *bm25.Index {
	docs := make([][]string, len(tools))
	for i, t := range tools {
		props, _ := t.params["properties"].(map[string]any)
		params := slices.Sorted(maps.Keys(props))
		docs[i] = []string{t.name, t.description, strings.Join(params, " ")}
	}
	return bm25.New(docs, []float64{2, 1, 1}, indexedBytes)
}

// searchIn is search_tools' argument.
type searchIn struct {
	Query string `json:"query" jsonschema:"words for what a tool should do, such as: read a file"`
}

// A foundTool is a tool in search_tools' result.
type foundTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// searchOut is search_tools' result. The conversation keeps it, and the
// tools it names are read back from it (foundTools).
type searchOut struct {
	Found []foundTool `json:"found"`
	Note  string      `json:"note"`
}

// tool makes search_tools over s. servers are the MCP servers whose tools
// are deferred, named in its description so the model knows what it may
// find.
func (s *toolSearch) tool(servers []string) Tool {
	desc := fmt.Sprintf("Finds tools among %d more that are not listed yet, by what they do. "+
		"The tools found can be called from your next step on.", len(s.deferred))
	if len(servers) > 0 {
		desc += " They include the tools of: " + trunc.Excerpt(strings.Join(servers, ", "), 500) + "."
	}
	return NewTool(SearchToolsName, desc, func(_ context.Context, in searchIn) (searchOut, error) {
		out := searchOut{Found: []foundTool{}}
		for _, i := range s.index().Search(in.Query, searchResults) {
			t := s.deferred[i]
			out.Found = append(out.Found, foundTool{t.name, trunc.Excerpt(t.description, shownDescription)})
		}
		out.Note = "These tools can be called from your next step on."
		if len(out.Found) == 0 {
			out.Note = "No tool matches. Try other words."
		}
		return out, nil
	})
}

// withFound returns the toolset of a turn whose conversation found the
// named deferred tools: ts with their definitions offered and their calls
// allowed. ts itself is not changed.
func (ts *toolset) withFound(names []string) *toolset {
	if len(names) == 0 {
		return ts
	}
	turn := *ts
	turn.raw = slices.Clip(ts.raw)
	turn.found = make(map[string]bool, len(names))
	for _, name := range names {
		def := ts.search.defs[name]
		if def == nil {
			continue // no longer a tool of the agent
		}
		raw, err := def()
		if err != nil {
			continue // newToolset encoded the others alike: never so
		}
		turn.raw = append(turn.raw, raw)
		turn.found[name] = true
	}
	return &turn
}

// programs returns ts with every deferred tool callable, for the calls a
// program runs itself (Agent.ExecuteToolCalls): a durable run's tool
// activity runs each call on an agent that does not hold its conversation.
func (ts *toolset) programs() *toolset {
	if ts.search == nil {
		return ts
	}
	c := *ts
	c.all = true
	return &c
}

// notOffered is the error of a call of a tool the turn did not offer: one
// the agent does not have, or a deferred one no search found. It lists the
// tools offered only: the deferred ones may be thousands.
func (ts *toolset) notOffered(name string, deferred bool) error {
	if deferred {
		return fmt.Errorf("%w: %q; call %s first to find it", ErrDeferredTool, name, SearchToolsName)
	}
	offered := make([]string, 0, len(ts.names))
	for _, n := range ts.names {
		if !ts.byName[n].deferred || ts.found[n] {
			offered = append(offered, n)
		}
	}
	return fmt.Errorf("%w %q; the tools are: %s", ErrUnknownTool, name, strings.Join(offered, ", "))
}

// toolsFor returns the agent's toolset with the deferred tools that the
// conversation, then pending (a turn's messages not committed yet), found.
func (a *Agent) toolsFor(ctx context.Context, pending []openai.ChatCompletionMessageParamUnion) *toolset {
	ts := a.core.tools.get(ctx)
	if ts.search == nil {
		return ts
	}
	a.mu.Lock()
	names := foundTools(a.conv.list, pending)
	a.mu.Unlock()
	return ts.withFound(names)
}

// foundTools returns the tools named by the results of search_tools in the
// messages, at most MaxFoundTools of them: those found last, in the order
// they were first found, so the requests' tool lists grow at their end and
// keep a provider's prompt cache.
func foundTools(lists ...[]openai.ChatCompletionMessageParamUnion) []string {
	searches := map[string]bool{} // the IDs of search_tools calls
	first, last := map[string]int{}, map[string]int{}
	n := 0
	for _, list := range lists {
		for i := range list {
			m := &list[i]
			if m.OfAssistant != nil {
				for _, tc := range m.OfAssistant.ToolCalls {
					if f := tc.OfFunction; f != nil && f.Function.Name == SearchToolsName {
						searches[f.ID] = true
					}
				}
			}
			if m.OfTool == nil || !searches[m.OfTool.ToolCallID] {
				continue
			}
			var out searchOut
			if json.Unmarshal([]byte(toolText(m.OfTool)), &out) != nil {
				continue // an error result, or one cut short
			}
			for _, f := range out.Found {
				if _, ok := first[f.Name]; !ok {
					first[f.Name] = n
				}
				last[f.Name] = n
				n++
			}
		}
	}
	names := slices.Collect(maps.Keys(first))
	if len(names) > MaxFoundTools {
		slices.SortFunc(names, func(x, y string) int { return last[y] - last[x] })
		names = names[:MaxFoundTools]
	}
	slices.SortFunc(names, func(x, y string) int { return first[x] - first[y] })
	return names
}

// toolText returns the text of a tool message.
func toolText(m *openai.ChatCompletionToolMessageParam) string {
	if m.Content.OfString.Valid() {
		return m.Content.OfString.Value
	}
	var sb strings.Builder
	for _, p := range m.Content.OfArrayOfContentParts {
		sb.WriteString(p.Text)
	}
	return sb.String()
}
