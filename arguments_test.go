package robby

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/robby-go/robby/internal/chatwire"

	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// argumentChunks returns the chunks of a stream sending one call of
// send_message with args, cut at the given cuts: at byte offsets with each
// piece's bytes written as they are (invalid UTF-8 when a cut falls inside
// a character), or at UTF-16 code units with every non-ASCII unit escaped
// (a lone surrogate when a cut falls inside a pair), as a JavaScript
// server slicing the string would.
func argumentChunks(args string, cuts []byte, utf16Cuts bool) []string {
	chunk := func(delta string) string {
		return `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`
	}
	chunks := []string{chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"send_message","arguments":""}}]}`)}
	var pieces []string
	if utf16Cuts {
		units := utf16.Encode([]rune(args))
		for i := 0; len(units) > 0; i++ {
			n := min(len(units), 1+int(cuts[i%len(cuts)])%7)
			var b strings.Builder
			for _, u := range units[:n] {
				switch {
				case u == '"' || u == '\\':
					b.WriteString(`\` + string(rune(u)))
				case u < 0x20 || u >= 0x7f:
					fmt.Fprintf(&b, `\u%04X`, u)
				default:
					b.WriteByte(byte(u))
				}
			}
			pieces = append(pieces, b.String())
			units = units[n:]
		}
	} else {
		rest := args
		for i := 0; rest != ""; i++ {
			n := min(len(rest), 1+int(cuts[i%len(cuts)])%7)
			var b strings.Builder
			for _, c := range []byte(rest[:n]) {
				switch {
				case c == '"' || c == '\\':
					b.WriteString(`\` + string(rune(c)))
				case c < 0x20:
					fmt.Fprintf(&b, `\u%04x`, c)
				default:
					b.WriteByte(c)
				}
			}
			pieces = append(pieces, b.String())
			rest = rest[n:]
		}
	}
	for _, p := range pieces {
		chunks = append(chunks, chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"`+p+`"}}]}`))
	}
	return chunks
}

// assembledArguments folds chunks as the streaming loop does and returns
// the arguments of the one call they make.
func assembledArguments(t *testing.T, chunks []string) string {
	t.Helper()
	r := new(reply)
	for _, c := range chunks {
		var resp chatwire.Response
		require.NoError(t, chatwire.DecodeChunk(ssestream.Event{Data: []byte(c)}, &resp), "chunk %q", c)
		r.addChunk(&resp)
	}
	calls := r.toolCalls()
	require.Len(t, calls, 1)
	return calls[0].Arguments
}

// FuzzArgumentFragments checks that any UTF-8 text, as the arguments of a
// call, reassembles exactly however it is cut: at any bytes, inside
// characters, or between the halves of an escaped surrogate pair.
func FuzzArgumentFragments(f *testing.F) {
	f.Add("Zürich, 東京 🌍", []byte{3, 1, 4, 1, 5, 9, 2, 6}, false)
	f.Add("Zürich, 東京 🌍", []byte{2, 7, 1, 8}, true)
	f.Add(`quote " back \ nl
 tab	`, []byte{0}, false)
	f.Fuzz(func(t *testing.T, text string, cuts []byte, utf16Cuts bool) {
		if !utf8.ValidString(text) || len(cuts) == 0 {
			return
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(map[string]string{"text": text}))
		args := strings.TrimSuffix(b.String(), "\n")
		require.Equal(t, args, assembledArguments(t, argumentChunks(args, cuts, utf16Cuts)))
	})
}

// TestArgumentsAssembledInLinearTime streams arguments in 4-byte
// fragments, as OpenAI does, through the assembler: re-reading the
// arguments so far on each fragment took over a minute for 256 KB.
func TestArgumentsAssembledInLinearTime(t *testing.T) {
	assertLinear(t, func(n int) []string {
		return argumentChunks(`{"text":"`+strings.Repeat("abc}", n/4)+`"}`, []byte{3}, false) // 1+3%7 = 4 bytes a fragment
	})
}

// TestArgumentsAssembledInLinearTimeWithNewIDs is the same with an id on
// every fragment, as LM Studio sends: each fragment asks whether the
// arguments so far are complete.
func TestArgumentsAssembledInLinearTimeWithNewIDs(t *testing.T) {
	assertLinear(t, func(n int) []string {
		chunks := argumentChunks(`{"text":"`+strings.Repeat("abc}", n/4)+`"}`, []byte{3}, false)
		for i := 1; i < len(chunks); i++ {
			chunks[i] = strings.Replace(chunks[i], `{"index":0,`, fmt.Sprintf(`{"index":0,"id":"id_%d",`, i), 1)
		}
		return chunks
	})
}

// assertLinear checks that assembling the chunks of n bytes of arguments
// takes time linear in n. A time limit flakes on a loaded machine; the
// ratio of the times for 16n and n bytes, each the best of interleaved
// rounds, does not: about 16 in linear time, 256 in quadratic time. Under
// -race at load 20 a linear assembler measured up to 75 and a quadratic one
// 267: the bound, 128, sits between them with room on both sides.
func assertLinear(t *testing.T, chunks func(n int) []string) {
	const n, factor, rounds = 4 << 10, 16, 5
	small, large := chunks(n), chunks(factor*n)
	best := func(d *time.Duration, chunks []string) {
		runtime.GC() // no garbage of the previous run to collect on this one's time
		start := time.Now()
		assembledArguments(t, chunks)
		if e := time.Since(start); *d == 0 || e < *d {
			*d = e
		}
	}
	var tSmall, tLarge time.Duration
	for range rounds {
		best(&tSmall, small)
		best(&tLarge, large)
	}
	ratio := float64(tLarge) / float64(tSmall)
	t.Logf("%d bytes in %d fragments: %v; %d× as many: %v (×%.1f)", n, len(small), tSmall, factor, tLarge, ratio)
	assert.Less(t, ratio, 8.0*factor, "time grows faster than the arguments")
}
