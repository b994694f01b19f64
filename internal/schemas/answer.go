package schemas

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/google/jsonschema-go/jsonschema"
)

// An Answer is the schema of a typed answer in every form robby uses it. It is
// sent to the model, as response_format or as the parameters of the answer
// tool. The answer is checked against it.
type Answer struct {
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
	Raw      json.RawMessage // its JSON, properties in the order of the fields
	Strict   json.RawMessage // its strict form for response_format; nil when it has none
	Params   map[string]any  // the parameters of the answer tool
	complete bool            // the checker reads every keyword the schema has
	Err      error
}

// answers caches the schema of each answer type, as schemaCache does
// for tools. Entries are immutable.
var answers sync.Map // reflect.Type → *Answer

// AnswerFor infers the schema of T exactly as [NewTool] does.
func AnswerFor(t reflect.Type) *Answer {
	if s, ok := answers.Load(t); ok {
		return s.(*Answer)
	}
	s, err := Infer(t)
	as := &Answer{Err: err}
	if err == nil {
		as = newAnswer(s)
	}
	actual, _ := answers.LoadOrStore(t, as)
	return actual.(*Answer)
}

// AnswerFrom reads a schema given as JSON, such as a schema file.
func AnswerFrom(m map[string]any) *Answer {
	b, err := json.Marshal(m)
	if err != nil {
		return &Answer{Err: fmt.Errorf("schema: %w", err)}
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return &Answer{Err: fmt.Errorf("schema: %w", err)}
	}
	return newAnswer(&s)
}

func newAnswer(s *jsonschema.Schema) *Answer {
	if s.Type != "object" {
		return &Answer{Err: fmt.Errorf("an answer must be a JSON object (a struct or a map), not %s", schemaTypes(s))}
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return &Answer{Err: fmt.Errorf("schema: %w", err)}
	}
	as := &Answer{schema: s, resolved: resolved, complete: checkerReads(s)}
	if as.Raw, err = json.Marshal(s); err == nil {
		err = json.Unmarshal(as.Raw, &as.Params)
	}
	if err != nil {
		return &Answer{Err: fmt.Errorf("schema: %w", err)}
	}
	if strict, ok := strictSchema(s.CloneSchemas()); ok {
		as.Strict, _ = json.Marshal(strict)
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
// outputs take. Every object is closed (additionalProperties false) and lists
// all its properties as required. The optional ones are made nullable. A schema
// with an open object (a map, a free-form value) or a $ref has no strict form.
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

// ResponseFormat is the response_format that asks for an answer of this schema.
// It is strict where the schema has a strict form.
func (as *Answer) ResponseFormat() openai.ChatCompletionNewParamsResponseFormatUnion {
	schema, strict := as.Strict, true
	if schema == nil {
		schema, strict = as.Raw, false
	}
	return openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "answer", Schema: schema, Strict: openai.Bool(strict)},
	}}
}
