// Package mcpmeta carries OpenTelemetry's trace context in the _meta of MCP
// requests (traceparent, tracestate). MCP's semantic conventions put it there.
// robby's client writes it, and package mcpserver reads it back.
package mcpmeta

import (
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Carrier is a propagation.TextMapCarrier over the _meta of an MCP request.
type Carrier mcp.Meta

// Get returns the string value of key, or "".
func (m Carrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

// Set sets key to value.
func (m Carrier) Set(key, value string) { m[key] = value }

// Keys returns the keys of the _meta.
func (m Carrier) Keys() []string { return slices.Collect(maps.Keys(m)) }
