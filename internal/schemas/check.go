package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	sjson "github.com/segmentio/encoding/json"
)

// Check validates an answer against the schema and decodes it strictly into
// out, a pointer. It returns every failure found, each a line the model can act
// on. None means out holds the answer.
func (as *Answer) Check(raw []byte, out any) []string {
	v, err := decodeAny(raw)
	if err != nil {
		return []string{"not valid JSON: " + err.Error()}
	}
	var at [8]step // deep enough for most answers: one allocation
	c := checker{at: at[:0]}
	v = c.value(as.schema, v)
	if c.nullsDropped {
		raw, _ = json.Marshal(v)
	}
	if len(c.failures) == 0 && !as.complete {
		// The schema says more than the checker reads (patterns,
		// formats, $refs): the validator has the last word.
		if err := as.resolved.Validate(v); err != nil {
			c.failures = append(c.failures, err.Error())
		}
	}
	if len(c.failures) > 0 {
		return c.failures
	}
	if err := DecodeStrict(raw, out); err != nil {
		return []string{fmt.Sprintf("the answer does not decode into %v: %v", reflect.TypeOf(out).Elem(), err)}
	}
	return nil
}

// decodeAny decodes one JSON value as encoding/json does into an any.
// segmentio/encoding does it in half the time, its strings sharing raw's
// memory. (The value lives no longer than the check.) What it refuses goes to
// encoding/json, whose words the model reads.
func decodeAny(raw []byte) (any, error) {
	var v any
	if fastParse(raw, &v, sjson.ZeroCopy) {
		return v, nil
	}
	v = nil
	err := json.Unmarshal(raw, &v)
	return v, err
}

// Decode decodes one JSON value into out, a pointer, as json.Unmarshal does.
// segmentio/encoding decodes it first, with a few allocations where
// encoding/json makes some five. Whatever it refuses, encoding/json decodes
// again and, if it refuses it too, says why.
func Decode(raw []byte, out any) error {
	if fastParse(raw, out, 0) {
		return nil
	}
	reflect.ValueOf(out).Elem().SetZero()
	return json.Unmarshal(raw, out)
}

// strictFlags make segmentio/encoding decode as decodeOnly does, and
// stricter: a key must match its field's name exactly. The answers it
// decodes have passed the checker, whose keys are exact.
const strictFlags = sjson.DisallowUnknownFields | sjson.DontMatchCaseInsensitiveStructFields

// DecodeStrict decodes one JSON value into out, refusing fields out does not
// have. Numbers that are whole but written with a fraction (5.0) count as
// integers, as JSON Schema counts them.
//
// segmentio/encoding decodes it first, five times faster than encoding/json. (A
// typed answer's check is most of what a typed run adds to a text run.)
// Whatever it refuses, encoding/json decodes again. If encoding/json refuses it
// too, it says why.
func DecodeStrict(raw []byte, out any) error {
	if fastParse(raw, out, strictFlags) {
		return nil
	}
	reflect.ValueOf(out).Elem().SetZero()
	return decodeStrictStd(raw, out)
}

// fastParse decodes raw into out with segmentio/encoding and reports whether
// it did. What it does not decode goes to encoding/json, which says why.
// segmentio/encoding is lenient in two places, so raw must first pass two
// checks, which allocate nothing. It skips the extra elements of a fixed-size
// array without reading their commas ([0,0 0]): raw's syntax is checked as
// encoding/json checks it. An integer of 20 digits or more can wrap around
// uint64 (20700000000000000000): such numbers are left to encoding/json.
func fastParse(raw []byte, out any, flags sjson.ParseFlags) bool {
	if !json.Valid(raw) || hasLongDigitRun(raw) {
		return false
	}
	rest, err := sjson.Parse(raw, out, flags)
	return err == nil && len(rest) == 0
}

// hasLongDigitRun reports whether b holds 20 digits in a row, as an integer
// past uint64 does. (A string or a fraction may too: encoding/json then
// decodes it, a little slower.)
func hasLongDigitRun(b []byte) bool {
	run := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			run = 0
			continue
		}
		if run++; run == 20 {
			return true
		}
	}
	return false
}

// decodeStrictStd is DecodeStrict with encoding/json alone.
func decodeStrictStd(raw []byte, out any) error {
	err := decodeOnly(raw, out)
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && strings.HasPrefix(typeErr.Value, "number") {
		if whole, ok := WholeNumbers(raw); ok {
			reflect.ValueOf(out).Elem().SetZero()
			err = decodeOnly(whole, out)
		}
	}
	return err
}

func decodeOnly(raw []byte, out any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(out); err != nil {
		return err
	}
	if d.More() {
		return errors.New("more than one value")
	}
	return nil
}

// A checker walks an answer along its schema and collects every failure. A
// validator would stop at the first, but the model repairs them all in one go.
// It reads the keywords inferred schemas use; the validator checks the rest.
type checker struct {
	failures     []string
	nullsDropped bool
	at           []step // where the value being checked is
}

// A step is a property's name or, if index is not -1, an item's index. The path
// to a value is written out, as a JSON Pointer, only when a failure names it.
// Most answers have none.
type step struct {
	key   string
	index int
}

func (c *checker) fail(format string, args ...any) {
	var path strings.Builder
	for _, s := range c.at {
		path.WriteByte('/')
		if s.index >= 0 {
			path.WriteString(strconv.Itoa(s.index))
		} else {
			path.WriteString(escapePointer(s.key))
		}
	}
	if path.Len() == 0 {
		path.WriteByte('/')
	}
	c.failures = append(c.failures, path.String()+": "+fmt.Sprintf(format, args...))
}

// in checks v against s one step further into the answer.
func (c *checker) in(to step, s *jsonschema.Schema, v any) any {
	c.at = append(c.at, to)
	v = c.value(s, v)
	c.at = c.at[:len(c.at)-1]
	return v
}

// value checks v and returns it with the optional properties set to null left
// out. Models write null for "no value". The schema would refuse null, and the
// decoder would keep it as a zero value anyway.
func (c *checker) value(s *jsonschema.Schema, v any) any {
	if s == nil {
		return v
	}
	if isFalse(s) {
		c.fail("no value is allowed here")
		return v
	}
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) }) {
		c.fail("expected %s, got %s", strings.Join(types, " or "), jsonType(v))
		return v
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return reflect.DeepEqual(e, v) }) {
		c.fail("must be one of %s, got %s", jsonText(s.Enum), jsonText(v))
	}
	if s.Const != nil && !reflect.DeepEqual(*s.Const, v) {
		c.fail("must be %s, got %s", jsonText(*s.Const), jsonText(v))
	}
	switch v := v.(type) {
	case float64:
		if s.Minimum != nil && v < *s.Minimum {
			c.fail("must be at least %v, got %v", *s.Minimum, v)
		}
		if s.Maximum != nil && v > *s.Maximum {
			c.fail("must be at most %v, got %v", *s.Maximum, v)
		}
	case []any:
		if s.MinItems != nil && len(v) < *s.MinItems {
			c.fail("must have at least %d items, got %d", *s.MinItems, len(v))
		}
		if s.MaxItems != nil && len(v) > *s.MaxItems {
			c.fail("must have at most %d items, got %d", *s.MaxItems, len(v))
		}
		for i, e := range v {
			v[i] = c.in(step{index: i}, s.Items, e)
		}
	case map[string]any:
		c.object(s, v)
	}
	if alts := append(slices.Clip(s.AnyOf), s.OneOf...); len(alts) > 0 {
		if !slices.ContainsFunc(alts, func(alt *jsonschema.Schema) bool {
			var sub checker
			sub.value(alt, v)
			return len(sub.failures) == 0
		}) {
			c.fail("matches none of the allowed forms")
		}
	}
	return v
}

func (c *checker) object(s *jsonschema.Schema, v map[string]any) {
	var buf [16]string // the keys of most objects, without an allocation
	keys := buf[:0]
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys) // failures in the same order every time
	for _, k := range keys {
		p, known := s.Properties[k]
		if v[k] == nil && known && !acceptsNull(p) && !slices.Contains(s.Required, k) {
			delete(v, k)
			c.nullsDropped = true
			continue
		}
		switch {
		case known:
			v[k] = c.in(step{key: k, index: -1}, p, v[k])
		case isFalse(s.AdditionalProperties):
			c.fail("unknown field %q; the fields are: %s", k, strings.Join(propertyNames(s), ", "))
		default:
			v[k] = c.in(step{key: k, index: -1}, s.AdditionalProperties, v[k])
		}
	}
	for _, k := range s.Required {
		if _, ok := v[k]; !ok {
			c.fail("missing required field %q", k)
		}
	}
}

// checkerReads reports whether the checker reads every keyword of s and its
// subschemas, as with the schemas robby's NewTool infers. Then an answer it
// passes, the validator passes too. So Check skips the validator, a third of
// its cost. Annotations (title, description, default...) assert nothing. Nor
// does format: JSON Schema 2020-12 makes it an annotation unless a validator
// opts in, and jsonschema-go's does not. (A time.Time field's date-time is
// checked by decoding it.)
func checkerReads(s *jsonschema.Schema) bool {
	if s == nil || isFalse(s) {
		return true
	}
	q := *s
	q.Title, q.Description, q.Comment, q.Default, q.Examples = "", "", "", nil, nil
	q.Format = ""
	q.Deprecated, q.ReadOnly, q.WriteOnly = false, false, false
	q.Type, q.Types, q.Enum, q.Const, q.Minimum, q.Maximum = "", nil, nil, nil, nil, nil
	q.MinItems, q.MaxItems, q.Items, q.Required, q.PropertyOrder = nil, nil, nil, nil, nil
	q.Properties, q.AdditionalProperties, q.AnyOf = nil, nil, nil
	if !reflect.ValueOf(q).IsZero() {
		return false
	}
	subs := append([]*jsonschema.Schema{s.Items, s.AdditionalProperties}, s.AnyOf...)
	for _, p := range s.Properties {
		subs = append(subs, p)
	}
	return !slices.ContainsFunc(subs, func(p *jsonschema.Schema) bool { return !checkerReads(p) })
}

func acceptsNull(s *jsonschema.Schema) bool {
	return s.Type == "null" || slices.Contains(s.Types, "null") || s.Type == "" && len(s.Types) == 0
}

// hasType reports whether v, decoded from JSON, is of the JSON Schema type t.
func hasType(v any, t string) bool {
	switch v := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case float64:
		return t == "number" || t == "integer" && v == math.Trunc(v) && !math.IsInf(v, 0)
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	}
	return false
}

func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if v == math.Trunc(v) {
			return "integer " + jsonText(v)
		}
		return "number " + jsonText(v)
	case []any:
		return "array"
	}
	return "object"
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escapePointer(k string) string { return pointerEscaper.Replace(k) }
