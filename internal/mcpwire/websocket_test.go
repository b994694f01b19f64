package mcpwire

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// wsTestServer is an httptest.Server that accepts WebSockets and hands each
// one, wrapped as a WebSocketConn, to serve. It remembers the last handshake
// so tests can check what the client sent and negotiated.
type wsTestServer struct {
	*httptest.Server
	handlers sync.WaitGroup // hijacked handlers, which httptest does not wait for

	mu          sync.Mutex
	header      http.Header
	subprotocol string
}

// newWSTestServer starts a server offering subprotocols (none if nil).
func newWSTestServer(t *testing.T, subprotocols []string, serve func(context.Context, *WebSocketConn)) *wsTestServer {
	t.Helper()
	s := &wsTestServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.handlers.Add(1)
		defer s.handlers.Done()
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: subprotocols})
		if err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		s.mu.Lock()
		s.header, s.subprotocol = r.Header.Clone(), c.Subprotocol()
		s.mu.Unlock()
		conn := NewWebSocketConn(c)
		defer conn.Close()
		serve(r.Context(), conn)
	}))
	return s
}

// wsURL is the server's address with the ws scheme.
func (s *wsTestServer) wsURL() string { return "ws" + strings.TrimPrefix(s.URL, "http") }

// handshake returns what the last client sent and negotiated.
func (s *wsTestServer) handshake() (http.Header, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.header, s.subprotocol
}

// close stops the server and waits for its handlers, so goleak sees none.
func (s *wsTestServer) close() {
	s.Close()
	s.handlers.Wait()
}

// wsConnTransport lets an mcp.Server use an already accepted connection.
type wsConnTransport struct{ conn mcp.Connection }

func (t wsConnTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }

type wsAddArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

type wsAddResult struct {
	Sum int `json:"sum"`
}

type wsBigArgs struct {
	Size int `json:"size"`
}

// newWSMCPServer is a real go-sdk server with a small and a large tool.
func newWSMCPServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "ws-test", Version: "v0.0.1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two numbers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in wsAddArgs) (*mcp.CallToolResult, wsAddResult, error) {
			return nil, wsAddResult{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Returns size bytes of text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in wsBigArgs) (*mcp.CallToolResult, any, error) {
			text := strings.Repeat("x", in.Size)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	return s
}

// serveWSMCP bridges each accepted connection to server until the session
// ends; sessions, if not nil, receives each server session.
func serveWSMCP(t *testing.T, server *mcp.Server, sessions chan<- *mcp.ServerSession) func(context.Context, *WebSocketConn) {
	return func(ctx context.Context, conn *WebSocketConn) {
		ss, err := server.Connect(ctx, wsConnTransport{conn}, nil)
		if err != nil {
			t.Errorf("server connect: %v", err)
			return
		}
		if sessions != nil {
			sessions <- ss
		}
		_ = ss.Wait()
	}
}

func TestWebSocketTransportMCPSession(t *testing.T) {
	defer goleak.VerifyNone(t)

	for _, tc := range []struct {
		name         string
		subprotocols []string
		want         string
		serverClient bool // dial with the httptest client rather than the default
	}{
		{"mcp subprotocol", []string{"mcp"}, "mcp", false},
		{"no subprotocol", nil, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newWSTestServer(t, tc.subprotocols, serveWSMCP(t, newWSMCPServer(), nil))
			defer srv.close()

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			header := http.Header{"Authorization": {"Bearer secret"}}
			client := mcp.NewClient(&mcp.Implementation{Name: "ws-client", Version: "v0.0.1"}, nil)
			// The session must outlive the context it was connected with.
			connectCtx, cancelConnect := context.WithCancel(ctx)
			var httpClient *http.Client
			if tc.serverClient {
				httpClient = srv.Client()
			}
			cs, err := client.Connect(connectCtx, NewWebSocketTransport(srv.wsURL(), header, httpClient), nil)
			cancelConnect()
			require.NoError(t, err)
			defer cs.Close()

			got, subprotocol := srv.handshake()
			assert.Equal(t, "Bearer secret", got.Get("Authorization"))
			assert.Equal(t, []string{"mcp"}, got.Values("Sec-WebSocket-Protocol"))
			assert.Equal(t, tc.want, subprotocol)

			tools, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			assert.ElementsMatch(t, []string{"add", "big"}, names)

			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}})
			require.NoError(t, err)
			require.False(t, res.IsError)
			assert.Equal(t, map[string]any{"sum": 5.0}, res.StructuredContent)

			const size = 2 << 20 // well past coder/websocket's 32 KiB default limit
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"size": size}})
			require.NoError(t, err)
			require.Len(t, res.Content, 1)
			text, ok := res.Content[0].(*mcp.TextContent)
			require.True(t, ok, "content is %T", res.Content[0])
			assert.Len(t, text.Text, size)

			require.NoError(t, cs.Close())
		})
	}
}

func TestWebSocketTransportServerClosesMidSession(t *testing.T) {
	defer goleak.VerifyNone(t)

	for _, tc := range []struct {
		name  string
		close func(*mcp.ServerSession, *WebSocketConn)
	}{
		{"close handshake", func(ss *mcp.ServerSession, _ *WebSocketConn) { _ = ss.Close() }},
		{"dropped connection", func(_ *mcp.ServerSession, conn *WebSocketConn) { _ = conn.conn.CloseNow() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := newWSMCPServer()
			closeNow, dropped := make(chan struct{}), make(chan struct{})
			srv := newWSTestServer(t, []string{"mcp"}, func(ctx context.Context, conn *WebSocketConn) {
				defer close(dropped)
				ss, err := server.Connect(ctx, wsConnTransport{conn}, nil)
				if !assert.NoError(t, err) {
					return
				}
				<-closeNow
				tc.close(ss, conn)
				_ = ss.Wait()
			})
			defer srv.close()
			stop := sync.OnceFunc(func() { close(closeNow) })
			defer stop()

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "ws-client", Version: "v0.0.1"}, nil)
			cs, err := client.Connect(ctx, NewWebSocketTransport(srv.wsURL(), nil, nil), nil)
			require.NoError(t, err)
			defer cs.Close()

			args := map[string]any{"a": 1, "b": 1}
			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: args})
			require.NoError(t, err)

			stop()
			<-dropped
			callCtx, cancelCall := context.WithTimeout(ctx, 5*time.Second)
			defer cancelCall()
			_, err = cs.CallTool(callCtx, &mcp.CallToolParams{Name: "add", Arguments: args})
			require.Error(t, err)
			assert.NoError(t, callCtx.Err(), "CallTool should fail, not wait for its deadline")
			t.Logf("CallTool after server close: %v", err)
			// The peer is gone; closing must not report its absence as a failure.
			assert.NoError(t, cs.Close())
		})
	}
}

func TestWebSocketConnReadBadMessages(t *testing.T) {
	defer goleak.VerifyNone(t)

	for _, tc := range []struct {
		name string
		typ  websocket.MessageType
		data []byte
		want string
	}{
		{"binary frame", websocket.MessageBinary, []byte(`{"jsonrpc":"2.0","method":"ping","id":1}`), "want text"},
		{"invalid JSON", websocket.MessageText, []byte(`{"jsonrpc":`), "decoding message"},
		{"not JSON-RPC", websocket.MessageText, []byte(`"hello"`), "decoding message"},
		{"too large", websocket.MessageText, []byte(strings.Repeat(" ", maxWebSocketMessageSize+1)), "read limited"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newWSTestServer(t, []string{"mcp"}, func(ctx context.Context, conn *WebSocketConn) {
				_ = conn.conn.Write(ctx, tc.typ, tc.data)
				_, _ = conn.Read(ctx) // wait for the client to go
			})
			defer srv.close()

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn, err := NewWebSocketTransport(srv.wsURL(), nil, nil).Connect(ctx)
			require.NoError(t, err)
			defer conn.Close()

			var msg jsonrpc.Message
			require.NotPanics(t, func() { msg, err = conn.Read(ctx) })
			assert.Nil(t, msg)
			require.Error(t, err)
			assert.ErrorContains(t, err, "websocket: ")
			assert.ErrorContains(t, err, tc.want)
			assert.NotErrorIs(t, err, io.EOF)
		})
	}
}

func TestWebSocketConnLifecycle(t *testing.T) {
	defer goleak.VerifyNone(t)

	t.Run("peer closes normally", func(t *testing.T) {
		srv := newWSTestServer(t, []string{"mcp"}, func(ctx context.Context, conn *WebSocketConn) {
			req, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			if assert.NoError(t, err) {
				assert.NoError(t, conn.Write(ctx, req))
			}
			assert.NoError(t, conn.Close())
		})
		defer srv.close()

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := NewWebSocketTransport(srv.wsURL(), nil, nil).Connect(ctx)
		require.NoError(t, err)
		defer conn.Close()

		// A done context fails the call but must not cost the connection.
		done, cancelDone := context.WithCancel(ctx)
		cancelDone()
		_, err = conn.Read(done)
		assert.ErrorIs(t, err, context.Canceled)
		ping, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","method":"ping","id":1}`))
		require.NoError(t, err)
		assert.ErrorIs(t, conn.Write(done, ping), context.Canceled)

		msg, err := conn.Read(ctx)
		require.NoError(t, err)
		req, ok := msg.(*jsonrpc.Request)
		require.True(t, ok, "message is %T", msg)
		assert.Equal(t, "notifications/initialized", req.Method)

		_, err = conn.Read(ctx)
		assert.ErrorIs(t, err, io.EOF)
		assert.NoError(t, conn.Close())
	})

	t.Run("close unblocks read", func(t *testing.T) {
		srv := newWSTestServer(t, []string{"mcp"}, func(ctx context.Context, conn *WebSocketConn) {
			_, _ = conn.Read(ctx)
		})
		defer srv.close()

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := NewWebSocketTransport(srv.wsURL(), nil, nil).Connect(ctx)
		require.NoError(t, err)

		readErr := make(chan error, 1)
		go func() {
			_, err := conn.Read(context.Background())
			readErr <- err
		}()
		time.Sleep(50 * time.Millisecond) // let Read block

		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { assert.NoError(t, conn.Close()) })
		}
		wg.Wait()
		select {
		case err := <-readErr:
			assert.ErrorIs(t, err, io.EOF)
		case <-time.After(10 * time.Second):
			t.Fatal("Read still blocked after Close")
		}
		assert.NoError(t, conn.Close())

		req, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","method":"ping","id":1}`))
		require.NoError(t, err)
		assert.ErrorIs(t, conn.Write(ctx, req), mcp.ErrConnectionClosed)
	})

	t.Run("concurrent writes", func(t *testing.T) {
		const n = 64
		got := make(chan []string, 1)
		srv := newWSTestServer(t, []string{"mcp"}, func(ctx context.Context, conn *WebSocketConn) {
			var methods []string
			for range n {
				msg, err := conn.Read(ctx)
				if !assert.NoError(t, err) {
					break
				}
				methods = append(methods, msg.(*jsonrpc.Request).Method)
			}
			got <- methods
			_, _ = conn.Read(ctx)
		})
		defer srv.close()

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := NewWebSocketTransport(srv.wsURL(), nil, nil).Connect(ctx)
		require.NoError(t, err)
		defer conn.Close()

		var want []string
		var wg sync.WaitGroup
		for i := range n {
			method := fmt.Sprintf("notifications/m%d", i)
			want = append(want, method)
			wg.Go(func() {
				// Large enough that frames would interleave without a lock.
				params := fmt.Sprintf(`{"pad":%q}`, strings.Repeat("p", 64<<10))
				req, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","method":"` + method + `","params":` + params + `}`))
				if assert.NoError(t, err) {
					assert.NoError(t, conn.Write(ctx, req))
				}
			})
		}
		wg.Wait()
		assert.ElementsMatch(t, want, <-got)
	})

	t.Run("handshake rejected", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no token", http.StatusUnauthorized)
		}))
		defer srv.Close()

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := NewWebSocketTransport("ws"+strings.TrimPrefix(srv.URL, "http"), nil, nil).Connect(ctx)
		require.Error(t, err)
		assert.ErrorContains(t, err, "websocket: ")
		assert.ErrorContains(t, err, "401")
	})
}

// Compile-time check that the transport satisfies the SDK's interfaces.
var (
	_ mcp.Transport  = (*WebSocketTransport)(nil)
	_ mcp.Connection = (*WebSocketConn)(nil)
)
