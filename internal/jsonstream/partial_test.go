package jsonstream

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const nestedJSON = `{"title": "A \"quoted\" {brace} [bracket] \\ title", "n": -1.5e3, "ok": true, "none": null,
	"list": [1, [2, {}], {"x": "y"}, []], "obj": {"deep": {"deeper": ["é", "\u00e9"]}}, "last": 0}`

// Every prefix of a value closes into valid JSON that keeps only complete
// values: a prefix of the fields the whole value has.
func TestPartialJSONEveryPrefixCloses(t *testing.T) {
	var p Partial
	require.False(t, p.Write("Sure! Here it is:\n```json\n"))
	var last []byte
	completions := 0
	for i := range len(nestedJSON) {
		if p.Write(nestedJSON[i : i+1]) {
			completions++
		}
		c := p.Closed()
		if c == nil {
			continue
		}
		require.True(t, json.Valid(c), "prefix %q closed as %s", nestedJSON[:i+1], c)
		if string(c) != string(last) {
			// A new closing covers a longer part of the text.
			require.True(t, len(c) >= len(last)-8, "%s after %s", c, last)
			last = c
		}
	}
	assert.True(t, p.Complete())
	assert.Equal(t, 18, completions) // a number and its container may end on one byte
	assert.JSONEq(t, nestedJSON, string(p.Closed()))
	assert.False(t, p.Write("\n```\nAnything else?"), "text after the value is ignored")
	assert.Equal(t, nestedJSON, string(p.buf))
}

// Braces in the prose before the object are not the object: the value
// read, byte by byte or whole, is the JSON after them.
func TestPartialJSONSkipsBracesOfProse(t *testing.T) {
	const answer = `{"name": "Ann", "tags": ["a"]}`
	for _, prose := range []string{"The format is {name}. Here:\n", "Fields {a, b} and {c}: ", "a } then {x} "} {
		var p Partial
		for i := range len(prose + answer) {
			p.Write((prose + answer)[i : i+1])
		}
		assert.True(t, p.Complete(), prose)
		assert.Equal(t, answer, string(p.Closed()), prose)

		var whole Partial
		whole.Write(prose + answer)
		assert.Equal(t, answer, string(whole.Closed()), prose)
	}
}

func TestPartialJSONClosedPrefixes(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a": 1`, ``},
		{`{"a": 1,`, `{"a": 1}`},
		{`{"a": "x`, ``},
		{`{"a": "x"`, `{"a": "x"}`},
		{`{"a": "x", "b": [1, 2`, `{"a": "x", "b": [1]}`},
		{`{"a": "x", "b": [1, 2, {"c": tr`, `{"a": "x", "b": [1, 2]}`},
		{`{"a": "x", "b": [1, 2, {"c": true`, `{"a": "x", "b": [1, 2, {"c": true}]}`}, // a literal ends with its last letter
		{`{"a": "x", "b": [1, 2, {"c": true}`, `{"a": "x", "b": [1, 2, {"c": true}]}`},
		{`{"a": {"b": {}`, `{"a": {"b": {}}}`},
		{`{"k": "v", "other`, `{"k": "v"}`},
		{`{"k": "v", "other":`, `{"k": "v"}`},
		{`{"k": "}\"]"`, `{"k": "}\"]"}`},
	} {
		var p Partial
		p.Write(tc.in)
		assert.Equal(t, tc.want, string(p.Closed()), tc.in)
	}
}

func TestExtractJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{"Sure:\n```json\n{\"a\": {\"b\": [1]}}\n```\nDone.", `{"a": {"b": [1]}}`},
		{`Use {braces} or {"not": json} then {"a": "}"}`, `{"a": "}"}`},
		{`{ prose around {"a": 1} }`, `{"a": 1}`},
		{`no object`, ``},
		{`{"a": 1`, ``},
	} {
		got, ok := Extract(tc.in)
		assert.Equal(t, tc.want != "", ok, tc.in)
		assert.Equal(t, tc.want, string(got), tc.in)
	}
}

// Text full of nested braces that are not JSON costs linear time: searched
// again inside each span, it would take some 10^10 steps.
func TestExtractJSONIsLinear(t *testing.T) {
	text := strings.Repeat("{", 50_000) + strings.Repeat("x}", 50_000)
	_, ok, steps := ExtractSteps(text)
	assert.False(t, ok)
	assert.LessOrEqual(t, steps, (MaxRescans+1)*len(text))
}

type bigAnswer struct {
	Items []struct {
		Name  string   `json:"name"`
		Score float64  `json:"score"`
		Tags  []string `json:"tags"`
	} `json:"items"`
}

// bigAnswerJSON makes an answer of n items.
func bigAnswerJSON(n int) string {
	var b strings.Builder
	b.WriteString(`{"items": [`)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"name": "item \"%d\"", "score": %d.5, "tags": ["a", "b\\n"]}`, i, i)
	}
	b.WriteString("]}")
	return b.String()
}

// BenchmarkPartialJSON measures the cost per streamed byte of reading an
// answer as it arrives, in the worst split (one byte a delta), for
// answers of about 64 KB and ten times that: the parser alone, and with
// the partial values decoded (Answer, the flat list only). Three
// shapes: a flat list of small objects, objects nested 16 deep, and one
// long string full of escapes. ns/byte and B/byte stay flat as the answer
// grows tenfold: linear time, memory bounded by the text kept.
func BenchmarkPartialJSON(b *testing.B) {
	shapes := []struct {
		name string
		make func(size int) string
	}{
		{"list", func(size int) string { return bigAnswerJSON(size / 65) }},
		{"nested", nestedAnswerJSON},
		{"string", longStringJSON},
	}
	perByte := func(b *testing.B, size int, run func()) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for b.Loop() {
			run()
		}
		runtime.ReadMemStats(&after)
		n := float64(b.N) * float64(size)
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/byte")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/byte")
	}
	for _, shape := range shapes {
		for _, size := range []int{64 << 10, 640 << 10} {
			text := shape.make(size)
			b.Run(fmt.Sprintf("parser/%s/%dKB", shape.name, size>>10), func(b *testing.B) {
				perByte(b, len(text), func() {
					var p Partial
					for i := range len(text) {
						p.Write(text[i : i+1])
					}
					if !p.Complete() {
						b.Fatal("incomplete")
					}
				})
			})
			if shape.name != "list" {
				continue
			}
			b.Run(fmt.Sprintf("partials/%s/%dKB", shape.name, size>>10), func(b *testing.B) {
				perByte(b, len(text), func() {
					var pa Answer[bigAnswer]
					for i := range len(text) {
						pa.Add(text[i : i+1])
					}
				})
			})
		}
	}
}

// nestedAnswerJSON makes an answer of about size bytes: a list of objects
// nested 16 deep.
func nestedAnswerJSON(size int) string {
	one := strings.Repeat(`{"k": [1, `, 16) + `"leaf"` + strings.Repeat(`]}`, 16)
	var b strings.Builder
	b.WriteString(`{"items": [`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(one)
	}
	b.WriteString("]}")
	return b.String()
}

// longStringJSON makes an answer of about size bytes: one string field,
// with escaped quotes and newlines.
func longStringJSON(size int) string {
	const line = `a line with \"quotes\" and a \\ backslash\n`
	return `{"text": "` + strings.Repeat(line, size/len(line)+1) + `"}`
}
