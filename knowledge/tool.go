package knowledge

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/robby-go/robby"
)

// ToolName is the name the model calls the tool of [Tool] by.
const ToolName = "search_knowledge"

// maxToolLimit bounds the passages one tool call returns.
const maxToolLimit = 20

type toolArgs struct {
	Query  string            `json:"query" jsonschema:"what to look for: a question or keywords"`
	Filter map[string]string `json:"filter,omitempty" jsonschema:"only passages of documents whose metadata has these values, such as {\"format\": \"markdown\"}"`
	Limit  int               `json:"limit,omitempty" jsonschema:"how many passages to return, 5 if not given, 20 at most"`
}

// A Passage is a passage the tool returns to the model.
type Passage struct {
	// Cite is how the model should cite the passage: "source:lines".
	Cite      string `json:"cite"`
	Source    string `json:"source"`
	Heading   string `json:"heading,omitempty"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Text      string `json:"text"`
}

type toolResult struct {
	Passages []Passage `json:"passages"`
}

// Tool returns the tool search_knowledge, which searches r with the
// model's query and optional metadata filter. Its result, sent to the
// model as JSON, lists the passages with their source (the document's ID)
// and lines, which the model is asked to cite:
//
//	{"passages": [{"cite": "docs/install.md:12-30", "source": "docs/install.md",
//	  "heading": "Install > Linux", "start_line": 12, "end_line": 30, "text": "..."}]}
func Tool(r Retriever) robby.Tool {
	return robby.NewTool(ToolName,
		"Search the knowledge base for passages that answer a question. "+
			"Cite the passages you use by their \"cite\" value in brackets, like [docs/install.md:12-30].",
		func(ctx context.Context, in toolArgs) (toolResult, error) {
			if strings.TrimSpace(in.Query) == "" {
				return toolResult{}, errors.New("query is empty: say what to look for")
			}
			limit := min(in.Limit, maxToolLimit)
			hits, err := r.Search(ctx, in.Query, SearchOptions{Limit: limit, Filter: in.Filter})
			if err != nil {
				return toolResult{}, err
			}
			res := toolResult{Passages: make([]Passage, len(hits))}
			for i, h := range hits {
				res.Passages[i] = Passage{Cite: h.Citation(), Source: h.Source, Heading: h.Heading,
					StartLine: h.StartLine, EndLine: h.EndLine, Text: h.Text}
			}
			return res, nil
		})
}

// DefaultContextTokens is the budget of [Context] when not told.
const DefaultContextTokens = 1000

// ContextOptions choose the passages of [Context].
type ContextOptions struct {
	// Limit is how many passages at most (default DefaultLimit).
	Limit int
	// MaxTokens bounds the message (default DefaultContextTokens),
	// estimated at 4 bytes a token: passages that would pass it are left
	// out, and a first passage alone too long is cut.
	MaxTokens int
	// Mode and Filter are those of [SearchOptions].
	Mode   Mode
	Filter map[string]string
}

// contextIntro opens the message of Context.
const contextIntro = "Passages from the knowledge base that may answer the user's next message. " +
	"Use them when they are relevant, and cite each one you use by its tag in brackets, like [%s].\n"

// Context searches r for query and returns a system message for the model
// holding the passages found, each tagged with its citation, within the
// budget of opts.MaxTokens, with the hits it holds. When nothing is found,
// the message is "".
func Context(ctx context.Context, r Retriever, query string, opts ContextOptions) (string, []Hit, error) {
	budget := opts.MaxTokens
	if budget <= 0 {
		budget = DefaultContextTokens
	}
	budget *= 4
	hits, err := r.Search(ctx, query, SearchOptions{Limit: opts.Limit, Mode: opts.Mode, Filter: opts.Filter})
	if err != nil || len(hits) == 0 {
		return "", nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, contextIntro, hits[0].Citation())
	var kept []Hit
	for _, h := range hits {
		head := "\n[" + h.Citation() + "]"
		if h.Heading != "" {
			head += " " + h.Heading
		}
		head += "\n"
		text := h.Text
		if room := budget - b.Len() - len(head) - 1; len(text) > room {
			if len(kept) > 0 || room < 200 {
				continue // a later, shorter passage may fit
			}
			text = cutText(text, room-len("…")) + "…"
		}
		b.WriteString(head + text + "\n")
		kept = append(kept, h)
	}
	if len(kept) == 0 {
		return "", nil, nil
	}
	return b.String(), kept, nil
}

// cutText returns the longest prefix of s no longer than n bytes that ends
// on a rune boundary.
func cutText(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
