package robby

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's log messages reach the stream of the conversation whose call
// caused them only where the wire says which call that is: over streamable
// HTTP, the server answers a tools/call POST with a stream of its own that
// carries the call's notifications. The go-sdk merges every stream into one
// session, and its log handler learns nothing of where a message came
// from, so the HTTP client of such a server reads the streams of robby's
// calls first and marks each log message with its call's progress token,
// under a _meta key the server never sees (so cannot forge). Log messages
// without the mark (stdio, the other transports, the session's standalone
// stream, or an event too large to hold) go to the logger only.

// maxTaggedEvent bounds the bytes of one server-sent event held to read
// it; a larger event passes on as it came, so its log message, if it is
// one, goes to the logger only.
const maxTaggedEvent = 1 << 20

// newRouteKey returns the _meta key that marks a connection's log messages
// with their call: random, so that no server can send it.
func newRouteKey() string { return "robby.call/" + rand.Text() }

type routedCallKey struct{}

// routedCall is the call whose HTTP requests carry it in their context.
type routedCall struct{ key, token string }

// withRoutedCall returns ctx for the tools/call request of the call whose
// progress token is token: the requests made with it, the POST and any GET
// resuming its stream, have their log messages marked.
func withRoutedCall(ctx context.Context, key, token string) context.Context {
	return context.WithValue(ctx, routedCallKey{}, routedCall{key, token})
}

// routed returns a copy of t whose HTTP client marks the log messages of
// robby's calls on the connection whose key is key.
func routed(t *mcp.StreamableClientTransport, key string) *mcp.StreamableClientTransport {
	client := t.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	c := *client
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = routeTransport{next: next, key: key}
	routed := *t
	routed.HTTPClient = &c
	return &routed
}

// routeTransport marks the log messages in the event streams that answer
// the requests of a routed call.
type routeTransport struct {
	next http.RoundTripper
	key  string
}

func (t routeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	call, ok := req.Context().Value(routedCallKey{}).(routedCall)
	if !ok || call.key != t.key || resp.StatusCode/100 != 2 {
		return resp, nil
	}
	if media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); media != "text/event-stream" {
		return resp, nil
	}
	resp.Body = newLogTagger(resp.Body, call)
	resp.ContentLength = -1
	return resp, nil
}

// logTagger passes on an event stream, adding the call's mark to the _meta
// of each notifications/message event. It holds one event at a time, and
// at most maxTaggedEvent bytes of it: a larger one passes on unchanged, as
// it arrives. Other events pass on byte for byte.
type logTagger struct {
	body  io.ReadCloser
	r     *bufio.Reader
	call  routedCall
	event []byte // the lines of the event being read
	line  int    // where the line being read begins in event
	data  []byte // the event's data: its data lines' values joined by "\n", as in SSE
	some  bool   // the event has a data line
	pass  bool   // the event is too large to hold: pass it on until its end
	start bool   // while passing: the next byte begins a line
	buf   []byte
	out   []byte // what is ready to be read, in buf
	err   error  // the body's error, once out is read
}

func newLogTagger(body io.ReadCloser, call routedCall) *logTagger {
	return &logTagger{body: body, r: bufio.NewReaderSize(body, 64<<10), call: call}
}

func (t *logTagger) Read(p []byte) (int, error) {
	for len(t.out) == 0 {
		if t.err != nil {
			return 0, t.err
		}
		t.buf = t.buf[:0]
		if cap(t.buf) > 64<<10 { // a large event does not keep its memory
			t.buf = nil
		}
		t.step()
		t.out = t.buf
	}
	n := copy(p, t.out)
	t.out = t.out[n:]
	return n, nil
}

func (t *logTagger) Close() error { return t.body.Close() }

// step reads the next piece of a line and adds what is ready to buf.
func (t *logTagger) step() {
	frag, err := t.r.ReadSlice('\n')
	if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
		t.err = err
	}
	switch {
	case t.pass:
		t.buf = append(t.buf, frag...)
		if t.start && err == nil && isBlankLine(frag) {
			t.pass = false // the event ended
		}
		t.start = err == nil
	case len(t.event)+len(frag) > maxTaggedEvent:
		t.buf, t.event = append(t.event, frag...), t.buf // pass on what is held, without a copy
		t.reset()
		t.pass, t.start = err != nil || !isBlankLine(frag), err == nil
	default:
		if len(t.event)+len(frag) > cap(t.event) { // double: a large event costs twice its size, not five times
			t.event = slices.Grow(t.event, len(t.event)+len(frag))
		}
		t.event = append(t.event, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			return // the line goes on
		}
		t.endLine(err)
	}
}

// endLine reads the line just completed: a blank line, or the end of the
// stream, ends the event; a data line adds to its data. A stream that
// fails passes on the event as far as it came, unchanged.
func (t *logTagger) endLine(err error) {
	line := bytes.TrimRight(t.event[t.line:], "\r\n")
	t.line = len(t.event)
	if field, value, ok := bytes.Cut(line, []byte{':'}); ok && string(field) == "data" {
		if t.some {
			t.data = append(t.data, '\n')
		}
		t.data, t.some = append(t.data, bytes.TrimSpace(value)...), true
	}
	switch {
	case err != nil && err != io.EOF:
		t.buf = append(t.buf, t.event...)
	case len(line) == 0 || err == io.EOF:
		if tagged, ok := t.tagged(); ok {
			t.buf = tagged
		} else {
			t.buf = append(t.buf, t.event...)
		}
	default:
		return
	}
	t.reset()
}

func (t *logTagger) reset() {
	t.event, t.data, t.some, t.line = t.event[:0], t.data[:0], false, 0
	if cap(t.event) > 64<<10 { // a large event does not keep its memory
		t.event, t.data = nil, nil
	}
}

// tagged returns the event with its data marked, if it is a log message:
// its other lines as they came, and its data in one line where its first
// data line was.
func (t *logTagger) tagged() ([]byte, bool) {
	if !bytes.Contains(t.data, []byte(`"notifications/message"`)) {
		return nil, false
	}
	data, ok := markLog(t.data, t.call)
	if !ok {
		return nil, false
	}
	out, written := t.buf, false
	for line := range bytes.Lines(t.event) {
		if field, _, ok := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte{':'}); !ok || string(field) != "data" {
			out = append(out, line...)
		} else if !written {
			out = append(append(append(out, "data: "...), data...), '\n')
			written = true
		}
	}
	return out, true
}

// markLog adds the call's mark to the _meta of a notifications/message,
// keeping the rest of its parameters as they are.
func markLog(data []byte, call routedCall) ([]byte, bool) {
	msg, err := jsonrpc.DecodeMessage(data)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok || req.IsCall() || req.Method != "notifications/message" {
		return nil, false
	}
	var params, meta map[string]json.RawMessage
	if json.Unmarshal(req.Params, &params) != nil || params == nil {
		return nil, false
	}
	if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return nil, false
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	meta[call.key], _ = json.Marshal(call.token)
	params["_meta"], _ = json.Marshal(meta)
	if req.Params, err = json.Marshal(params); err != nil {
		return nil, false
	}
	data, err = jsonrpc.EncodeMessage(req)
	return data, err == nil
}

// isBlankLine reports whether line, read with its "\n", is empty.
func isBlankLine(line []byte) bool {
	return len(bytes.TrimRight(line, "\r\n")) == 0
}
