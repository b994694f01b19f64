package schemas

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckSkipsTheValidatorOnlyWhereTheCheckerReadsAll: an inferred
// schema is read whole by the checker, so check skips the validator; one
// with a keyword the checker does not read (pattern, format, oneOf, $ref)
// keeps it. Either way, every answer gets the failures it gets with the
// validator run.
func TestCheckSkipsTheValidatorOnlyWhereTheCheckerReadsAll(t *testing.T) {
	type city struct {
		Name      string   `json:"name" jsonschema:"the city's name"`
		Kind      string   `json:"kind" enum:"capital,town"`
		Landmarks []string `json:"landmarks"`
		Mayor     *struct {
			Name string `json:"name"`
		} `json:"mayor,omitempty"`
		Tags map[string]int `json:"tags,omitempty"`
	}
	inferred := AnswerFor(reflect.TypeFor[city]())
	require.NoError(t, inferred.Err)
	assert.True(t, inferred.complete)

	obj := func(p map[string]any) map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{"v": p}, "required": []any{"v"}}
	}
	for name, p := range map[string]map[string]any{
		"pattern":   {"type": "string", "pattern": "^a"},
		"oneOf":     {"oneOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "number"}}},
		"minLength": {"type": "string", "minLength": 2},
		"nested":    {"type": "array", "items": map[string]any{"type": "string", "maxLength": 1}},
	} {
		as := AnswerFrom(obj(p))
		require.NoError(t, as.Err, name)
		assert.False(t, as.complete, name)
	}
	plain := AnswerFrom(obj(map[string]any{"type": "integer", "minimum": 1, "title": "v", "description": "a v"}))
	assert.True(t, plain.complete)
	// format asserts nothing in the validator either: a string that is no
	// e-mail address passes both ways.
	email := AnswerFrom(obj(map[string]any{"type": "string", "format": "email"}))
	require.NoError(t, email.Err)
	assert.True(t, email.complete)
	validated := *email
	validated.complete = false
	var got, want map[string]any
	assert.Equal(t, validated.Check([]byte(`{"v":"not an address"}`), &want), email.Check([]byte(`{"v":"not an address"}`), &got))
	assert.Equal(t, want, got)

	for _, answer := range []string{
		`{"name":"Paris","kind":"capital","landmarks":["Louvre"]}`,
		`{"name":"Paris","kind":"village","landmarks":["Louvre"]}`,
		`{"name":"Paris","kind":"town","landmarks":[1],"mayor":null}`,
		`{"name":"Paris","kind":"town","landmarks":[],"mayor":{"name":"A","age":3}}`,
		`{"name":"Paris","kind":"town","landmarks":[],"tags":{"a":1.5}}`,
		`{"kind":"town","landmarks":[],"extra":true}`,
	} {
		validated := *inferred
		validated.complete = false
		var got, want city
		assert.Equal(t, validated.Check([]byte(answer), &want), inferred.Check([]byte(answer), &got), answer)
		assert.Equal(t, want, got, answer)
	}
}

// TestCheckFailurePaths: each failure names where it is as a JSON Pointer,
// items by index and keys escaped (~0, ~1), however deep; the checker
// writes it only for a failure, and every failure is listed in key order.
func TestCheckFailurePaths(t *testing.T) {
	as := AnswerFrom(map[string]any{
		"type": "object", "required": []any{"a/b~"}, "additionalProperties": false,
		"properties": map[string]any{"a/b~": map[string]any{"type": "array", "items": map[string]any{
			"type": "object", "required": []any{"n"},
			"properties":           map[string]any{"n": map[string]any{"type": "integer", "minimum": 0}},
			"additionalProperties": map[string]any{"type": "array", "items": map[string]any{"enum": []any{"x"}}},
		}}},
	})
	require.NoError(t, as.Err)
	var out map[string]any
	failures := as.Check([]byte(`{"a/b~": [{"n": 1}, {"n": -1, "more": ["x", "y"]}, {"z": [1]}, {"n": "1"}], "c": null}`), &out)
	assert.Equal(t, []string{
		`/a~1b~0/1/more/1: must be one of ["x"], got "y"`,
		`/a~1b~0/1/n: must be at least 0, got -1`,
		`/a~1b~0/2/z/0: must be one of ["x"], got 1`,
		`/a~1b~0/2: missing required field "n"`,
		`/a~1b~0/3/n: expected integer, got string`,
		`/: unknown field "c"; the fields are: a/b~`,
	}, failures)
	assert.Nil(t, out)
}

// fuzzAnswer has the kinds of field answers are decoded into.
type fuzzAnswer struct {
	fuzzEmbedded
	Name    string            `json:"name"`
	Count   int               `json:"count"`
	Small   int8              `json:"small"`
	Ratio   float64           `json:"ratio"`
	OK      bool              `json:"ok"`
	Tags    []string          `json:"tags"`
	Scores  map[string]int    `json:"scores"`
	Maybe   *int              `json:"maybe"`
	When    time.Time         `json:"when"`
	Inner   *fuzzAnswer       `json:"inner"`
	Any     any               `json:"any"`
	Raw     json.RawMessage   `json:"raw"`
	Fixed   [2]uint           `json:"fixed"`
	Quoted  int               `json:"quoted,string"`
	Opt     string            `json:"opt,omitempty"`
	Nested  []map[string]bool `json:"nested"`
	ignored string
}

type fuzzEmbedded struct {
	Note string `json:"note"`
}

// FuzzAnswerDecode checks that the fast decoders of a typed answer and of
// a tool's arguments (segmentio/encoding, with encoding/json for what it refuses) decode
// every input exactly as encoding/json alone does, or refuse it with
// encoding/json's words.
func FuzzAnswerDecode(f *testing.F) {
	for _, seed := range []string{
		`{"name": "Paris", "count": 3, "tags": ["a", "b"], "scores": {"x": 1}}`,
		`{"NAME": "x", "Count": 1, "tagſ": ["a"], "oK": true}`,
		`{"count": 5.0, "small": 300, "ratio": 1e400}`,
		`{"when": "2026-11-25T17:00:00Z", "maybe": null, "inner": {"name": "\ud83c\udf0d"}}`,
		`{"quoted": "12", "raw": {"a": [1, 2]}, "fixed": [1, 2, 3], "note": "n", "ignored": "x"}`,
		`{"any": [1, "x", null, {"y": false}], "nested": [{"a": true}]}`,
		`{"name": "\xff\xfe"} trailing`,
		`{"name": "a", "name": "b"}`,
		"{\"opt\": \"\\u0000\", \"count\": -0}\n",
		`[1, 2]`,
		`{"count": 9223372036854775808}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, err := decodeAny(raw)
		var want any
		wantErr := json.Unmarshal(raw, &want)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(v, want) {
			t.Fatalf("decodeAny(%q) = %#v, %v; encoding/json: %#v, %v", raw, v, err, want, wantErr)
		}
		var got, std fuzzAnswer
		err = DecodeStrict(raw, &got)
		wantErr = decodeStrictStd(raw, &std)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("DecodeStrict(%q): %v; encoding/json: %v", raw, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, std) {
			t.Fatalf("DecodeStrict(%q) = %+v; encoding/json: %+v", raw, got, std)
		}
		if got.ignored != "" {
			t.Fatalf("DecodeStrict(%q) set an unexported field", raw)
		}
		var fast, plain fuzzAnswer
		err = Decode(raw, &fast)
		wantErr = json.Unmarshal(raw, &plain)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(fast, plain) {
			t.Fatalf("Decode(%q) = %+v, %v; encoding/json: %+v, %v", raw, fast, err, plain, wantErr)
		}
	})
}
