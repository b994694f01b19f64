package mcpwire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxWebSocketMessageSize bounds one inbound message. coder/websocket's 32 KiB
// default is far too small for MCP results such as file contents. Still, some
// bound is needed, so a broken peer cannot exhaust memory.
const maxWebSocketMessageSize = 10 << 20 // 10 MiB

// webSocketSubprotocol is offered on the handshake because the MCP
// community WebSocket convention uses it; servers that ignore it still work.
const webSocketSubprotocol = "mcp"

// WebSocketTransport exists because the go-sdk ships no WebSocket client
// transport, and some MCP servers are only reachable that way.
type WebSocketTransport struct {
	URL        string       // ws:// or wss:// endpoint
	Header     http.Header  // sent on the handshake, e.g. Authorization
	HTTPClient *http.Client // nil means http.DefaultClient
}

// NewWebSocketTransport keeps call sites short; the fields may also be set
// directly.
func NewWebSocketTransport(url string, header http.Header, client *http.Client) *WebSocketTransport {
	return &WebSocketTransport{URL: url, Header: header, HTTPClient: client}
}

// Connect implements [mcp.Transport]. ctx bounds only the handshake, so the
// session outlives it.
func (t *WebSocketTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, _, err := websocket.Dial(ctx, t.URL, &websocket.DialOptions{
		HTTPClient:   t.HTTPClient,
		HTTPHeader:   t.Header,
		Subprotocols: []string{webSocketSubprotocol},
	})
	if err != nil {
		return nil, fmt.Errorf("websocket: %w", err)
	}
	return NewWebSocketConn(conn), nil
}

// WebSocketConn carries one JSON-RPC message per text message. It works on
// either end of a *websocket.Conn, so tests can serve MCP with it too.
type WebSocketConn struct {
	conn *websocket.Conn

	closing   chan struct{} // closed once Close starts, so reads end as io.EOF
	broken    atomic.Bool   // the socket failed, so a close handshake would too
	closeOnce sync.Once
	closeErr  error
}

// NewWebSocketConn raises the read limit, which every user of the
// connection needs for large MCP results.
func NewWebSocketConn(conn *websocket.Conn) *WebSocketConn {
	conn.SetReadLimit(maxWebSocketMessageSize)
	return &WebSocketConn{conn: conn, closing: make(chan struct{})}
}

// Read implements [mcp.Connection]. The SDK calls it with a context that is
// never done. A caller whose ctx ends mid-read loses the connection, because
// coder/websocket closes it then.
func (c *WebSocketConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	// Checked here because coder/websocket would close the whole connection
	// on an already-done context.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	typ, data, err := c.conn.Read(ctx)
	if err != nil {
		c.broken.Store(true)
		return nil, c.readError(err)
	}
	if typ != websocket.MessageText {
		return nil, fmt.Errorf("robby: websocket: got a %v message, want text", typ)
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return nil, fmt.Errorf("websocket: decoding message: %w", err)
	}
	return msg, nil
}

// readError turns a clean end of the session into io.EOF, which the SDK
// treats as an orderly shutdown, and labels everything else.
func (c *WebSocketConn) readError(err error) error {
	select {
	case <-c.closing:
		return io.EOF
	default:
	}
	switch websocket.CloseStatus(err) {
	case websocket.StatusNormalClosure, websocket.StatusGoingAway:
		return io.EOF
	}
	return fmt.Errorf("websocket: read: %w", err)
}

// Write implements [mcp.Connection]. coder/websocket serializes concurrent
// writers itself, so no lock is needed here.
func (c *WebSocketConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	// As in Read: a done context must not tear the connection down.
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("websocket: encoding message: %w", err)
	}
	select {
	case <-c.closing:
		return fmt.Errorf("websocket: write: %w", mcp.ErrConnectionClosed)
	default:
	}
	if err := c.conn.Write(ctx, websocket.MessageText, data); err != nil {
		c.broken.Store(true)
		return fmt.Errorf("websocket: write: %w", err)
	}
	return nil
}

// Close implements [mcp.Connection]. It performs the close handshake, which
// also ends a pending Read and waits for coder/websocket's goroutines. After a
// failed Read or Write it skips the handshake. A peer that has gone away cannot
// answer it, and the error would only be noise.
func (c *WebSocketConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closing)
		var err error
		if c.broken.Load() {
			err = c.conn.CloseNow()
		} else {
			err = c.conn.Close(websocket.StatusNormalClosure, "")
		}
		// net.ErrClosed means the peer or a failed read closed it first.
		if err != nil && !errors.Is(err, net.ErrClosed) {
			c.closeErr = fmt.Errorf("websocket: close: %w", err)
		}
	})
	return c.closeErr
}

// SessionID implements [mcp.Connection]; a WebSocket is its own session, so
// there is no ID to report.
func (c *WebSocketConn) SessionID() string { return "" }
