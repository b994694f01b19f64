// Package jsonstream reads JSON as it streams in, a byte at a time, on one
// [Scanner]. It reads a tool call's arguments ([Args]) and a typed answer's
// partial values ([Partial], [Answer]). Each byte costs constant time, whatever
// the nesting or the size of the fragments.
package jsonstream
