package robby

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	sjson "github.com/segmentio/encoding/json"
)

// An answerSchema is the schema of a typed answer in every form robby uses
// it: sent to the model (as response_format or as the parameters of the
// answer tool) and checked against the answer.
type answerSchema struct {
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
	raw      json.RawMessage // its JSON, properties in the order of the fields
	strict   json.RawMessage // its strict form for response_format; nil when it has none
	params   map[string]any  // the parameters of the answer tool
	complete bool            // the checker reads every keyword the schema has
	err      error
}

// answerSchemas caches the schema of each answer type, as schemaCache does
// for tools. Entries are immutable.
var answerSchemas sync.Map // reflect.Type → *answerSchema

// answerSchemaFor infers the schema of T exactly as [NewTool] does.
func answerSchemaFor(t reflect.Type) *answerSchema {
	if s, ok := answerSchemas.Load(t); ok {
		return s.(*answerSchema)
	}
	s, err := inferSchema(t)
	as := &answerSchema{err: err}
	if err == nil {
		as = newAnswerSchema(s)
	}
	actual, _ := answerSchemas.LoadOrStore(t, as)
	return actual.(*answerSchema)
}

// answerSchemaFrom reads a schema given as JSON, such as a schema file.
func answerSchemaFrom(m map[string]any) *answerSchema {
	b, err := json.Marshal(m)
	if err != nil {
		return &answerSchema{err: fmt.Errorf("schema: %w", err)}
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return &answerSchema{err: fmt.Errorf("schema: %w", err)}
	}
	return newAnswerSchema(&s)
}

func newAnswerSchema(s *jsonschema.Schema) *answerSchema {
	if s.Type != "object" {
		return &answerSchema{err: fmt.Errorf("an answer must be a JSON object (a struct or a map), not %s", schemaTypes(s))}
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return &answerSchema{err: fmt.Errorf("schema: %w", err)}
	}
	as := &answerSchema{schema: s, resolved: resolved, complete: checkerReads(s)}
	if as.raw, err = json.Marshal(s); err == nil {
		err = json.Unmarshal(as.raw, &as.params)
	}
	if err != nil {
		return &answerSchema{err: fmt.Errorf("schema: %w", err)}
	}
	if strict, ok := strictSchema(s.CloneSchemas()); ok {
		as.strict, _ = json.Marshal(strict)
	}
	return as
}

func schemaTypes(s *jsonschema.Schema) string {
	switch {
	case s.Type != "":
		return s.Type
	case len(s.Types) > 0:
		return strings.Join(s.Types, " or ")
	}
	return "any value"
}

// strictSchema rewrites s in place into the form OpenAI's strict structured
// outputs take: every object closed (additionalProperties false) and
// listing all its properties as required, the optional ones made nullable.
// A schema with an open object (a map, a free-form value) or a $ref has no
// strict form.
func strictSchema(s *jsonschema.Schema) (*jsonschema.Schema, bool) {
	if s == nil {
		return s, true
	}
	if s.Ref != "" || len(s.Defs) > 0 || len(s.Definitions) > 0 {
		return nil, false
	}
	if s.Type == "" && len(s.Types) == 0 && len(s.AnyOf) == 0 && len(s.Enum) == 0 && s.Const == nil {
		return nil, false // any value
	}
	if slices.Contains(append(s.Types, s.Type), "object") {
		if !isFalse(s.AdditionalProperties) {
			return nil, false
		}
		required := s.Required
		s.Required = nil
		for _, name := range propertyNames(s) {
			p := s.Properties[name]
			if !slices.Contains(required, name) {
				p = nullable(p)
			}
			var ok bool
			if s.Properties[name], ok = strictSchema(p); !ok {
				return nil, false
			}
			s.Required = append(s.Required, name)
		}
	}
	var ok bool
	if s.Items, ok = strictSchema(s.Items); !ok {
		return nil, false
	}
	for i := range s.AnyOf {
		if s.AnyOf[i], ok = strictSchema(s.AnyOf[i]); !ok {
			return nil, false
		}
	}
	return s, true
}

// propertyNames returns an object's properties in their order.
func propertyNames(s *jsonschema.Schema) []string {
	names := slices.Clone(s.PropertyOrder)
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// nullable returns s accepting null too.
func nullable(s *jsonschema.Schema) *jsonschema.Schema {
	switch {
	case s.Type != "":
		s.Types, s.Type = []string{s.Type, "null"}, ""
	case len(s.Types) > 0:
		if !slices.Contains(s.Types, "null") {
			s.Types = append(s.Types, "null")
		}
	default:
		return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{s, {Type: "null"}}}
	}
	if len(s.Enum) > 0 && !slices.Contains(s.Enum, nil) {
		s.Enum = append(s.Enum, nil)
	}
	return s
}

// isFalse reports whether s is the schema nothing matches, as jsonschema-go
// writes it.
func isFalse(s *jsonschema.Schema) bool {
	return s != nil && s.Not != nil && reflect.ValueOf(*s.Not).IsZero()
}

// check validates an answer against the schema and decodes it strictly
// into out, a pointer. It returns every failure found, each a line the
// model can act on; none means out holds the answer.
func (as *answerSchema) check(raw []byte, out any) []string {
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
	if err := decodeStrict(raw, out); err != nil {
		return []string{fmt.Sprintf("the answer does not decode into %v: %v", reflect.TypeOf(out).Elem(), err)}
	}
	return nil
}

// decodeAny decodes one JSON value as encoding/json does into an any.
// segmentio/encoding does it in half the time, its strings sharing raw's
// memory (the value lives no longer than the check); what it refuses goes
// to encoding/json, whose words the model reads.
func decodeAny(raw []byte) (any, error) {
	var v any
	if rest, err := sjson.Parse(raw, &v, sjson.ZeroCopy); err == nil && len(rest) == 0 {
		return v, nil
	}
	v = nil
	err := json.Unmarshal(raw, &v)
	return v, err
}

// strictFlags make segmentio/encoding decode as decodeOnly does, and
// stricter: a key must match its field's name exactly. The answers it
// decodes have passed the checker, whose keys are exact.
const strictFlags = sjson.DisallowUnknownFields | sjson.DontMatchCaseInsensitiveStructFields

// decodeStrict decodes one JSON value into out, refusing fields out does
// not have. Numbers that are whole but written with a fraction (5.0) count
// as integers, as JSON Schema counts them.
//
// segmentio/encoding decodes it first, five times faster than
// encoding/json (a typed answer's check is most of what a typed run adds
// to a text run); whatever it refuses, encoding/json decodes again and,
// if it refuses it too, says why.
func decodeStrict(raw []byte, out any) error {
	if rest, err := sjson.Parse(raw, out, strictFlags); err == nil && len(rest) == 0 {
		return nil
	}
	reflect.ValueOf(out).Elem().SetZero()
	return decodeStrictStd(raw, out)
}

// decodeStrictStd is decodeStrict with encoding/json alone.
func decodeStrictStd(raw []byte, out any) error {
	err := decodeOnly(raw, out)
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && strings.HasPrefix(typeErr.Value, "number") {
		if whole, ok := wholeNumbers(raw); ok {
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

// A checker walks an answer along its schema and collects every failure,
// where a validator would stop at the first: the model repairs them all in
// one go. It reads the keywords inferred schemas use; the validator checks
// the rest.
type checker struct {
	failures     []string
	nullsDropped bool
	at           []step // where the value being checked is
}

// A step is a property's name or, if index is not -1, an item's index:
// the path to a value is written out only when a failure names it, as a
// JSON Pointer (most answers have none).
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

// value checks v and returns it with the optional properties set
// to null left out, as models write "no value": the schema would refuse
// null, and the decoder would keep it as a zero value anyway.
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

// checkerReads reports whether the checker reads every keyword of s and
// its subschemas, as with the schemas [NewTool] infers: then an answer it
// passes, the validator passes too, and check skips the validator (a third
// of its cost). Annotations (title, description, default...) assert nothing;
// nor does format, which JSON Schema 2020-12 makes an annotation unless a
// validator opts in, and jsonschema-go's does not (a time.Time field's
// date-time is checked by decoding it).
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

// refusalPattern matches the messages of providers refusing a request's
// structured-output part, and toolsRefusal those refusing its tools: see
// refused.
var (
	refusalPattern = regexp.MustCompile(`(?i)response_format|json_schema|json schema|grammar|structured output|guided|invalid format|response_schema`)
	toolsRefusal   = regexp.MustCompile(`(?i)tool`)
)

// refused reports whether err is a provider refusing the request for what
// pattern names, rather than a failure of the request as such.
func refused(err error, pattern *regexp.Regexp) bool {
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.StatusCode {
	case 400, 422, 500, 501: // llama.cpp and its forks answer 500
		return pattern.MatchString(apiErr.Message)
	}
	return false
}
