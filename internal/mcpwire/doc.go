// Package mcpwire holds robby's MCP transports: the reading of a server's
// notices off the wire, and the WebSocket transport.
package mcpwire
