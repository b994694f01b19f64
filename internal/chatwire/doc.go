// Package chatwire speaks the chat-completions wire. It encodes requests from
// parts encoded once, decodes responses and chunks, and reads error bodies. It
// knows nothing of agents.
package chatwire
