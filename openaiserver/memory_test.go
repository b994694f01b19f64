package openaiserver_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
)

// maxBytesPerBodyByte is what the endpoint may allocate for each byte of a
// request's body, however the body is split: 40, in a binary built without
// the race detector, which allocates more (raceAllocFactor).
const maxBytesPerBodyByte = 40 * raceAllocFactor

// discardUpstream is a model endpoint in memory that reads a request and
// answers "ok": what the endpoint allocates is then its own.
type discardUpstream struct{}

func (discardUpstream) RoundTrip(req *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, req.Body)
	req.Body.Close()
	body := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
}

// memoryEndpoint serves an agent named "m" whose model is a discardUpstream.
func memoryEndpoint(tb testing.TB, opts openaiserver.Options) http.Handler {
	tb.Helper()
	a, err := robby.New(robby.WithBaseURL("http://upstream.invalid/v1"), robby.WithAPIKey(""), robby.WithModel("m"),
		robby.WithRequestOptions(option.WithHTTPClient(&http.Client{Transport: discardUpstream{}}), option.WithMaxRetries(0)))
	require.NoError(tb, err)
	tb.Cleanup(func() { a.Close() })
	return openaiserver.New(map[string]*robby.Agent{"m": a}, opts)
}

// splitBody is a request of about size bytes made of many small values of
// one kind; broken, its last value is not valid.
type splitBody struct {
	name        string
	head, tail  string // around the values
	value, last string // the values; last ends them (a broken one to make it invalid)
	broken      string
}

var splitBodies = []splitBody{
	{name: "tiny messages", head: `{"model":"m","messages":[`, value: `{"role":"user","content":"a"},`,
		last: `{"role":"user","content":"a"}`, tail: `]}`, broken: `{"role":"wizard","content":"a"}`},
	{name: "tiny content parts", head: `{"model":"m","messages":[{"role":"user","content":[`, value: `{"type":"text","text":"a"},`,
		last: `{"type":"text","text":"a"}`, tail: `]}]}`, broken: `{"text":"a"}`},
	{name: "tiny tool calls", head: `{"model":"m","messages":[{"role":"assistant","tool_calls":[`,
		value: `{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}},`,
		last:  `{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}`,
		tail:  `]},{"role":"user","content":"a"}]}`, broken: `{"id":"c","type":"function"}`},
	{name: "one message", head: `{"model":"m","messages":[{"role":"user","content":"`, value: `aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa`,
		last: `a`, tail: `"}]}`, broken: `\x`},
}

func (b splitBody) build(size int, broken bool) []byte {
	last := b.last
	if broken {
		last = b.broken
	}
	var buf bytes.Buffer
	buf.WriteString(b.head)
	for buf.Len() < size {
		buf.WriteString(b.value)
	}
	buf.WriteString(last)
	buf.WriteString(b.tail)
	return buf.Bytes()
}

// post serves one chat completion in this goroutine and returns its
// status, its body and the bytes allocated meanwhile.
func post(h http.Handler, body []byte) (int, string, uint64) {
	return postTo(h, "/v1/chat/completions", body)
}

// postTo is post to another route.
func postTo(h http.Handler, path string, body []byte) (int, string, uint64) {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	h.ServeHTTP(rec, req)
	runtime.ReadMemStats(&after)
	return rec.Code, rec.Body.String(), after.TotalAlloc - before.TotalAlloc
}

// TestServerMemoryBoundedByBody posts bodies of 1 MB split into a hundred
// thousand tiny values, valid and not: the endpoint allocates at most
// maxBytesPerBodyByte for each byte. Before, a body of tiny messages cost
// some 200 bytes a byte, in openai-go's decoding of the request.
func TestServerMemoryBoundedByBody(t *testing.T) {
	h := memoryEndpoint(t, openaiserver.Options{MaxMessages: 1 << 20})
	for _, b := range splitBodies {
		for _, broken := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/broken=%v", b.name, broken), func(t *testing.T) {
				body := b.build(1<<20, broken)
				status, answer, alloc := post(h, body)
				want := http.StatusOK
				if broken {
					want = http.StatusBadRequest
				}
				require.Equal(t, want, status, answer)
				perByte := float64(alloc) / float64(len(body))
				t.Logf("%d bytes, %.1f bytes allocated a byte", len(body), perByte)
				assert.LessOrEqual(t, perByte, float64(maxBytesPerBodyByte))
			})
		}
	}
}

// splitResponses are Responses requests of many tiny input items or parts.
var splitResponses = []splitBody{
	{name: "tiny input messages", head: `{"model":"m","store":false,"input":[`, value: `{"role":"user","content":"a"},`,
		last: `{"role":"user","content":"a"}`, tail: `]}`, broken: `{"role":"wizard","content":"a"}`},
	{name: "tiny input parts", head: `{"model":"m","store":false,"input":[{"role":"user","content":[`,
		value: `{"type":"input_text","text":"a"},`, last: `{"type":"input_text","text":"a"}`, tail: `]}]}`,
		broken: `{"type":"input_file","text":"a"}`},
	{name: "tiny function calls", head: `{"model":"m","store":false,"input":[`,
		value: `{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"a"},`,
		last:  `{"role":"user","content":"a"}`, tail: `]}`, broken: `{"type":"function_call_output","output":"a"}`},
}

// TestResponsesMemoryBoundedByBody is TestServerMemoryBoundedByBody for
// POST /v1/responses.
func TestResponsesMemoryBoundedByBody(t *testing.T) {
	h := memoryEndpoint(t, openaiserver.Options{MaxMessages: 1 << 20})
	for _, b := range splitResponses {
		for _, broken := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/broken=%v", b.name, broken), func(t *testing.T) {
				body := b.build(1<<20, broken)
				status, answer, alloc := postTo(h, "/v1/responses", body)
				want := http.StatusOK
				if broken {
					want = http.StatusBadRequest
				}
				require.Equal(t, want, status, "%.300s", answer)
				perByte := float64(alloc) / float64(len(body))
				t.Logf("%d bytes, %.1f bytes allocated a byte", len(body), perByte)
				assert.LessOrEqual(t, perByte, float64(maxBytesPerBodyByte))
			})
		}
	}
}

// TestServerRefusesTooManyMessages: a request with more messages than the
// server's limit is refused with 400, before they are decoded; the limit
// defaults to openaiserver.DefaultMaxMessages.
func TestServerRefusesTooManyMessages(t *testing.T) {
	one := `{"role":"user","content":"a"}`
	body := func(n int) []byte {
		return []byte(`{"model":"m","messages":[` + strings.Repeat(one+",", n-1) + one + `]}`)
	}
	limited := memoryEndpoint(t, openaiserver.Options{MaxMessages: 3})
	status, answer, _ := post(limited, body(3))
	assert.Equal(t, http.StatusOK, status, answer)
	status, answer, _ = post(limited, body(4))
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, answer, `'messages' holds 4 messages; this server takes at most 3.`)
	assert.Contains(t, answer, `"code":"too_many_messages"`)

	// A million (empty) messages in 3 MB, against the default limit.
	big := []byte(`{"model":"m","messages":[` + strings.Repeat(`{},`, 999_999) + `{}]}`)
	status, answer, alloc := post(memoryEndpoint(t, openaiserver.Options{}), big)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, answer, fmt.Sprintf("this server takes at most %d.", openaiserver.DefaultMaxMessages))
	assert.LessOrEqual(t, float64(alloc)/float64(len(big)), float64(maxBytesPerBodyByte))
}

// BenchmarkServerSplitBody posts 1 MB bodies split into many tiny values
// and, as the baseline, the same size as one message's text: the
// bytes/body-byte metric is what the endpoint allocates per byte.
func BenchmarkServerSplitBody(b *testing.B) {
	h := memoryEndpoint(b, openaiserver.Options{MaxMessages: 1 << 20})
	for _, sb := range splitBodies {
		for _, broken := range []bool{false, true} {
			body := sb.build(1<<20, broken)
			b.Run(fmt.Sprintf("%s/broken=%v", strings.ReplaceAll(sb.name, " ", "_"), broken), func(b *testing.B) {
				var total uint64
				for b.Loop() {
					_, _, alloc := post(h, body)
					total += alloc
				}
				b.SetBytes(int64(len(body)))
				b.ReportMetric(float64(total)/float64(b.N)/float64(len(body)), "B/body-byte")
			})
		}
	}
}
