package mcpconfig

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/robby-go/robby"
)

// annotationKeys are the fields of MCP tool annotations, as spelt.
var annotationKeys = []string{"readOnlyHint", "idempotentHint", "destructiveHint", "openWorldHint", "title"}

// annotate gives s the entry's "toolAnnotations". Each is read with exact
// field names: a misspelt hint is an error, not a hint silently dropped.
// encoding/json alone would match "destructivehint" too, or drop "readOnly".
func (e entry) annotate(s robby.MCPServer) (robby.MCPServer, error) {
	for _, tool := range slices.Sorted(maps.Keys(e.hints)) {
		var fields map[string]json.RawMessage
		var a mcp.ToolAnnotations
		if json.Unmarshal(e.hints[tool], &fields) != nil || fields == nil || json.Unmarshal(e.hints[tool], &a) != nil {
			return s, fmt.Errorf(`"toolAnnotations" of %q must be an object of MCP tool annotations: %s`,
				tool, strings.Join(annotationKeys, ", "))
		}
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			if !slices.Contains(annotationKeys, k) {
				return s, fmt.Errorf(`"toolAnnotations" of %q: unknown field %q; MCP tool annotations are %s`,
					tool, k, strings.Join(annotationKeys, ", "))
			}
		}
		s = s.WithToolAnnotations(tool, a)
	}
	return s, nil
}
