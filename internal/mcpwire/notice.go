package mcpwire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's progress notices and log messages are handled where robby reads
// them off the wire, before anything that follows them. The go-sdk's
// notification handlers do not handle them. The go-sdk queues notifications
// without bound and handles them on a goroutine of their own. A notice sent
// just before its call's result could then be handled after the call ended. A
// server flooding notices could grow the queue until memory ran out. Read in
// wire order, every notice of a call is its event before the call's result is.
// A flood waits for robby's logger.
//
// Over streamable HTTP, a server answers a tools/call POST with a stream of its
// own, which carries the call's notifications. A log message read on it so
// belongs to that call, and reaches its conversation's stream. The go-sdk
// merges every stream into one connection and cannot be wrapped there. So robby
// reads the streams at their HTTP body instead. Log messages read anywhere else
// go to the logger only, as they could belong to any conversation. That is
// stdio, the other transports, and the session's standalone stream. Progress
// reaches its call by its token, on every transport.

// maxHeldEvent bounds the bytes of one server-sent event held to read it. A
// larger event passes on as it came, to the go-sdk. Its handlers send a notice
// in it to the logger only.
const maxHeldEvent = 1 << 20

// A Noticer takes the notices read off a connection's wire. Notice handles req
// if it is a notice it reads, and reports whether it did. call is the progress
// token of the call on whose own response stream req was read, or "".
type Noticer interface {
	Notice(ctx context.Context, req *jsonrpc.Request, call string) bool
}

type routedCallKey struct{}

// routedCall is the call whose HTTP requests carry it in their context.
type routedCall struct {
	conn  Noticer
	token string
}

// WithCall returns ctx for the tools/call request of the call whose progress
// token is token. The log messages on the streams that answer it go to that
// call. Those streams are the POST and any GET resuming its stream.
func WithCall(ctx context.Context, n Noticer, token string) context.Context {
	return context.WithValue(ctx, routedCallKey{}, routedCall{n, token})
}

// ReadNotices returns t made to hand n the server's notices where they
// are read.
func ReadNotices(t mcp.Transport, n Noticer) mcp.Transport {
	if st, ok := t.(*mcp.StreamableClientTransport); ok {
		return routed(st, n)
	}
	return noticeTransport{t, n}
}

// noticeTransport hands the notices its connections read to conn, and the
// rest of the messages to the go-sdk. It is not used for streamable HTTP,
// whose connection the go-sdk must see as its own.
type noticeTransport struct {
	mcp.Transport
	conn Noticer
}

func (t noticeTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	inner, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return noticeConn{inner, t.conn}, nil
}

type noticeConn struct {
	mcp.Connection
	conn Noticer
}

func (c noticeConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if req, ok := msg.(*jsonrpc.Request); err != nil || !ok || !c.conn.Notice(ctx, req, "") {
			return msg, err
		}
	}
}

// routed returns a copy of t whose HTTP client hands the notices on its
// event streams to c.
func routed(t *mcp.StreamableClientTransport, c Noticer) *mcp.StreamableClientTransport {
	client := t.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	hc := *client
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc.Transport = routeTransport{next: next, conn: c}
	routed := *t
	routed.HTTPClient = &hc
	return &routed
}

// routeTransport reads the event streams that answer a connection's
// requests, for their notices.
type routeTransport struct {
	next http.RoundTripper
	conn Noticer
}

func (t routeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode/100 != 2 {
		return resp, err
	}
	if media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); media != "text/event-stream" {
		return resp, nil
	}
	ctx, token := req.Context(), ""
	if call, ok := ctx.Value(routedCallKey{}).(routedCall); ok && call.conn == t.conn {
		token = call.token
	}
	resp.Body = newNoticeReader(resp.Body, func(data []byte) bool {
		if !bytes.Contains(data, []byte(`"notifications/`)) {
			return false // not worth decoding
		}
		msg, err := jsonrpc.DecodeMessage(data)
		req, ok := msg.(*jsonrpc.Request)
		return err == nil && ok && t.conn.Notice(ctx, req, token)
	})
	resp.ContentLength = -1
	return resp, nil
}

// noticeReader passes on an event stream, less the data of the events that
// notice takes. Their other fields pass on, so the go-sdk still learns their ID
// and can resume the stream after them. It holds one event at a time, and at
// most maxHeldEvent bytes of it. A larger one passes on unread, as it arrives.
// Other events pass on byte for byte.
type noticeReader struct {
	body   io.ReadCloser
	r      *bufio.Reader
	notice func(data []byte) bool // reports whether it took the event's data
	event  []byte                 // the lines of the event being read
	line   int                    // where the line being read begins in event
	data   []byte                 // the event's data: its data lines' values joined by "\n", as in SSE
	some   bool                   // the event has a data line
	named  bool                   // the event has a type other than "message", which the go-sdk ignores
	pass   bool                   // the event is too large to hold: pass it on until its end
	start  bool                   // while passing: the next byte begins a line
	buf    []byte
	out    []byte // what is ready to be read, in buf
	err    error  // the body's error, once out is read
}

func newNoticeReader(body io.ReadCloser, notice func([]byte) bool) *noticeReader {
	return &noticeReader{body: body, r: bufio.NewReader(body), notice: notice}
}

func (t *noticeReader) Read(p []byte) (int, error) {
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

func (t *noticeReader) Close() error { return t.body.Close() }

// step reads the next piece of a line and adds what is ready to buf.
func (t *noticeReader) step() {
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
	case len(t.event)+len(frag) > maxHeldEvent:
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

// endLine reads the line just completed. A blank line, or the end of the
// stream, ends the event. A data line adds to its data. A stream that fails
// passes on the event as far as it came, unchanged.
func (t *noticeReader) endLine(err error) {
	line := bytes.TrimRight(t.event[t.line:], "\r\n")
	t.line = len(t.event)
	if field, value, ok := bytes.Cut(line, []byte{':'}); ok {
		switch string(field) {
		case "data":
			if t.some {
				t.data = append(t.data, '\n')
			}
			t.data, t.some = append(t.data, bytes.TrimSpace(value)...), true
		case "event":
			name := string(bytes.TrimSpace(value))
			t.named = name != "" && name != "message"
		}
	}
	switch {
	case err != nil && err != io.EOF:
		t.buf = append(t.buf, t.event...)
	case len(line) == 0 || err == io.EOF:
		if t.some && !t.named && t.notice(t.data) {
			t.buf = withoutData(t.buf, t.event)
		} else {
			t.buf = append(t.buf, t.event...)
		}
	default:
		return
	}
	t.reset()
}

func (t *noticeReader) reset() {
	t.event, t.data, t.some, t.named, t.line = t.event[:0], t.data[:0], false, false, 0
	if cap(t.event) > 64<<10 { // a large event does not keep its memory
		t.event, t.data = nil, nil
	}
}

// withoutData appends the lines of event but its data lines to buf,
// ending the event.
func withoutData(buf, event []byte) []byte {
	ended := false
	for line := range bytes.Lines(event) {
		field, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte{':'})
		if string(field) != "data" {
			buf = append(buf, line...)
			ended = isBlankLine(line)
		}
	}
	if !ended {
		buf = append(buf, '\n')
	}
	return buf
}

// isBlankLine reports whether line, read with its "\n", is empty.
func isBlankLine(line []byte) bool {
	return len(bytes.TrimRight(line, "\r\n")) == 0
}
