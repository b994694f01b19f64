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

	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scannerAgrees feeds data to a jsonScanner cut at the given offsets and
// checks at every cut that it says what json.Valid says of the prefix.
func scannerAgrees(t *testing.T, data []byte, cuts []byte) {
	t.Helper()
	var s jsonScanner
	at := 0
	check := func(end int) {
		s.feed(string(data[at:end]))
		at = end
		require.Equal(t, json.Valid(data[:end]), s.complete(), "after %q", data[:end])
	}
	for _, c := range cuts {
		if end := at + int(c)%8; end <= len(data) {
			check(end)
		}
	}
	check(len(data))
}

func TestJSONScannerAgreesWithValid(t *testing.T) {
	for _, in := range []string{
		``, ` `, `{}`, ` { } `, `[]`, `[1,2]`, `[1,]`, `{"a":1}`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{1:2}`,
		`"x"`, `"\u00e9\ud83c\udf0d"`, `"\x"`, `"\u12g4"`, "\"a\x01\"", "\"\xff\xfe\"", `true`, `tru`, `truex`,
		`null`, `false `, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `1e`, `1e+`, `1E-5`, `-12.5e10`, `1 2`, `{}{}`, `{}}`,
		`[{"a":[1,{"b":null}]},"c",true,false,-1.0e-2]`, `{"a":"}"}`, `{"a":"\"}"}`, `[[[[[]]]]]`, `[[[[]]]`,
		`{"text":"See you \\ud83d\\ude00"}`, "{\n\t\"a\" :\r 1 }",
	} {
		scannerAgrees(t, []byte(in), nil)
		scannerAgrees(t, []byte(in), []byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	}
}

// FuzzJSONScanner checks that the incremental scanner behind the assembler
// says what json.Valid says, at every cut of any bytes.
func FuzzJSONScanner(f *testing.F) {
	f.Add([]byte(`{"city":"Paris","days":[1,2.5e3,-0],"ok":true,"x":null}`), []byte{3, 1, 4, 1, 5})
	f.Add([]byte(`"\ud83c\udf0d"`), []byte{2, 6})
	f.Fuzz(func(t *testing.T, data, cuts []byte) { scannerAgrees(t, data, cuts) })
}

func TestUnquoteBytesKeepsWhatAStrictDecoderReplaces(t *testing.T) {
	for _, tc := range []struct{ lit, want string }{
		{`""`, ""},
		{`"plain"`, "plain"},
		{`"tab\tquote\"slash\/back\\"`, "tab\tquote\"slash/back\\"},
		{`"\u00e9\u6771"`, "é東"},
		{`"\uD83C\uDF0D"`, "🌍"},
		{`"\uD83C"`, "\xed\xa0\xbc"},                   // a lone high surrogate, kept as its three bytes
		{`"\uDF0D"`, "\xed\xbc\x8d"},                   // a lone low surrogate
		{`"\uDF0D\uD83C"`, "\xed\xbc\x8d\xed\xa0\xbc"}, // in the wrong order: two halves
		{"\"Z\xc3\"", "Z\xc3"},                         // invalid UTF-8 as it came
	} {
		got, err := unquoteBytes([]byte(tc.lit))
		require.NoError(t, err, tc.lit)
		assert.Equal(t, tc.want, got, tc.lit)
	}
	for _, bad := range []string{``, `"`, `x`, `"\"`, `"\u12"`, `"\q"`} {
		_, err := unquoteBytes([]byte(bad))
		assert.Error(t, err, bad)
	}
}

func TestWellFormed(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ok é 🌍", "ok é 🌍"},
		{"\xed\xa0\xbc\xed\xbc\x8d", "🌍"},            // two halves that met
		{"a\xed\xa0\xbcb", "a\uFFFDb"},               // a lone half
		{"\xed\xbc\x8d\xed\xa0\xbc", "\uFFFD\uFFFD"}, // halves in the wrong order
		{"Z\xc3", "Z\uFFFD"},                         // a character cut and never finished
		{"\uFFFD", "\uFFFD"},                         // a real U+FFFD stays one
	} {
		assert.Equal(t, tc.want, wellFormed([]byte(tc.in)), "%q", tc.in)
	}
}

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
		var resp apiResponse
		require.NoError(t, decodeChunk(ssestream.Event{Data: []byte(c)}, &resp), "chunk %q", c)
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
