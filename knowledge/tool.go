package knowledge

import (
	"context"
	"errors"
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

// Tool returns the tool search_knowledge, which searches r with the model's
// query and optional metadata filter. Its result goes to the model as JSON. It
// lists the passages with their source (the document's ID) and lines, which the
// model is asked to cite:
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
