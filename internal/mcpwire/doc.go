// Package mcpwire holds robby's MCP transports. It reads a server's notices off
// the wire, and holds the WebSocket transport.
package mcpwire
