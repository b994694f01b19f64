package mcpwire

import (
	"bytes"
	"crypto/sha256"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// taker returns a notice function for a noticeReader that takes the data
// of progress notices and log messages, and what it took.
func taker() (func([]byte) bool, *[]string) {
	var taken []string
	return func(data []byte) bool {
		if !bytes.Contains(data, []byte(`"notifications/`)) {
			return false // as robby's
		}
		msg, err := jsonrpc.DecodeMessage(data)
		req, ok := msg.(*jsonrpc.Request)
		if err != nil || !ok || req.IsCall() || (req.Method != "notifications/message" && req.Method != "notifications/progress") {
			return false
		}
		taken = append(taken, string(data))
		return true
	}, &taken
}

// TestNoticeReaderTakesOnlyNotices passes event streams through the
// reader, whole and a byte at a time: progress notices and log messages
// are taken, their events passing on without their data; every other
// event passes byte for byte.
func TestNoticeReaderTakesOnlyNotices(t *testing.T) {
	log := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`
	progress := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"robby-1","progress":1}}`
	long := strings.Replace(log, `"hi"`, `"`+strings.Repeat("é", 100<<10)+`"`, 1) // 200 KiB: longer than the read buffer
	huge := strings.Replace(log, `"hi"`, `"`+strings.Repeat("x", maxHeldEvent)+`"`, 1)
	for _, tc := range []struct {
		name, in, out string
		taken         []string
	}{
		{"log message", "data: " + log + "\n\n", "\n", []string{log}},
		{"with a name and an id", "event: message\nid: 7\ndata: " + log + "\n\n", "event: message\nid: 7\n\n", []string{log}},
		{"in two data lines, CRLF",
			"id: 8\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\r\ndata: \"params\":{\"level\":\"info\",\"data\":\"hi\"}}\r\n\r\n",
			"id: 8\r\n\r\n",
			[]string{"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\n\"params\":{\"level\":\"info\",\"data\":\"hi\"}}"}},
		{"long", "data: " + long + "\n\n", "\n", []string{long}},
		{"at the end of the stream", "data: " + log, "\n", []string{log}},
		{"progress", "data: " + progress + "\n\n", "\n", []string{progress}},
		{"a result quoting a log message", "id: 9\ndata: " + `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"\"notifications/message\""}]}}` + "\n\n", "", nil},
		{"an event of another type", "event: other\ndata: " + log + "\n\n", "", nil},
		{"a priming event and a comment", "id: 0\ndata: \n\n: ping\n\n", "", nil},
		{"not JSON", "data: notifications/message {\n\n", "", nil},
		{"too large to hold", "data: " + huge + "\n\ndata: " + log + "\n\n", "data: " + huge + "\n\n\n", []string{log}},
	} {
		if tc.out == "" {
			tc.out = tc.in
		}
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				notice, taken := taker()
				got, err := io.ReadAll(newNoticeReader(io.NopCloser(r), notice))
				require.NoError(t, err)
				assert.True(t, string(got) == tc.out, "got %.300q", got)
				assert.Equal(t, tc.taken, *taken)
			}
		})
	}
}

// filler reads as an endless run of one byte.
type filler byte

func (f filler) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(f)
	}
	return len(p), nil
}

// TestNoticeReaderStreamsInBoundedMemory passes a large event, then 10,000
// log messages, through the reader: the large event passes unchanged
// without being held, so the memory allocated does not grow with it.
func TestNoticeReaderStreamsInBoundedMemory(t *testing.T) {
	small, large := passLargeEvent(t, 16<<20), passLargeEvent(t, 64<<20)
	t.Logf("allocated: %.2f MiB for 16 MiB, %.2f MiB for 64 MiB", float64(small)/(1<<20), float64(large)/(1<<20))
	assert.Less(t, large, uint64(8<<20), "the event is not held whole")
	assert.Less(t, int64(large)-int64(small), int64(1<<20), "memory does not grow with the event")
}

// passLargeEvent passes an event of size bytes, then 10,000 log messages,
// through the reader, and returns the bytes allocated while the event
// passed.
func passLargeEvent(t *testing.T, size int) uint64 {
	const logs = 10_000
	log := "data: " + `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}` + "\n\n"
	head, tail := `data: {"jsonrpc":"2.0","id":1,"result":{"text":"`, "\"}}\n\n"
	first := int64(len(head) + size + len(tail))
	stream := func() io.Reader {
		return io.MultiReader(strings.NewReader(head), io.LimitReader(filler('x'), int64(size)), strings.NewReader(tail),
			strings.NewReader(strings.Repeat(log, logs)))
	}
	want, got := sha256.New(), sha256.New()
	_, err := io.Copy(want, io.LimitReader(stream(), first))
	require.NoError(t, err)

	notice, taken := taker()
	reader := newNoticeReader(io.NopCloser(stream()), notice)
	buf := make([]byte, 32<<10)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n, err := io.CopyBuffer(got, io.LimitReader(reader, first), buf)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	assert.Equal(t, first, n)
	assert.Equal(t, want.Sum(nil), got.Sum(nil), "the large event passes unchanged")

	rest, err := io.ReadAll(reader)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("\n", logs), string(rest))
	assert.Len(t, *taken, logs, "every log message after it is taken")
	return after.TotalAlloc - before.TotalAlloc
}

// FuzzNoticeReader passes any stream through the reader, whole and a
// byte at a time: it never panics, what it takes and passes on does not
// depend on how the stream is split, and a stream without a notification
// passes byte for byte.
func FuzzNoticeReader(f *testing.F) {
	log := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`
	for _, seed := range []string{
		"data: " + log + "\n\n",
		"event: message\r\nid: 1\r\ndata: " + log + "\r\n\r\n: ping\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\ndata: \"params\":{\"_meta\":null,\"data\":1}}\n\n",
		"id: 0\ndata:\n\ndata: " + log,
		"event: x\ndata: " + log + "\n\nevent:message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		notice, taken := taker()
		whole, err := io.ReadAll(newNoticeReader(io.NopCloser(bytes.NewReader(in)), notice))
		require.NoError(t, err)
		notice, takenSplit := taker()
		split, err := io.ReadAll(newNoticeReader(io.NopCloser(iotest.OneByteReader(bytes.NewReader(in))), notice))
		require.NoError(t, err)
		require.Equal(t, whole, split, "the output depends on how the stream is split")
		require.Equal(t, *taken, *takenSplit, "what is taken depends on how the stream is split")
		if !bytes.Contains(in, []byte(`"notifications/`)) {
			require.Equal(t, in, whole, "a stream without a notification changed")
		}
	})
}
