package schemas

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// Infer infers the JSON Schema of t as jsonschema-go does. A time.Time is a
// string of format date-time (RFC 3339, which its JSON decoding takes). Said up
// front, the model need not learn it from a repair. It then adds the values an
// enum tag lists to its field's schema:
//
//	Priority string `json:"priority" enum:"low,normal,high"`
//
// On a slice, array or map field the enum applies to its elements.
func Infer(t reflect.Type) (*jsonschema.Schema, error) {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[time.Time](): {Type: "string", Format: "date-time"},
	}})
	if err != nil {
		return nil, err
	}
	if err := applyEnums(t, s); err != nil {
		return nil, fmt.Errorf("%v: %w", t, err)
	}
	return s, nil
}

func applyEnums(t reflect.Type, s *jsonschema.Schema) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s == nil {
		return nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return applyEnums(t.Elem(), s.Items)
	case reflect.Map:
		return applyEnums(t.Elem(), s.AdditionalProperties)
	case reflect.Struct:
	default:
		return nil
	}
	for _, f := range reflect.VisibleFields(t) {
		name, ok := jsonName(f)
		p := s.Properties[name]
		if !ok || p == nil {
			continue
		}
		if list, tagged := f.Tag.Lookup("enum"); tagged {
			if err := setEnum(f, p, list); err != nil {
				return err
			}
		}
		if err := applyEnums(f.Type, p); err != nil {
			return err
		}
	}
	return nil
}

// jsonName returns the name encoding/json gives a field. It returns false for a
// field it leaves out or flattens (an embedded struct without a name).
func jsonName(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		if f.Anonymous {
			return "", false
		}
		name = f.Name
	}
	return name, true
}

// setEnum sets the schema of field f's values, p, to the comma-separated values
// of list. p is its elements' schema for a slice, array or map. The values are
// typed as the field's values are.
func setEnum(f reflect.StructField, p *jsonschema.Schema, list string) error {
	t := f.Type
	for {
		switch t.Kind() {
		case reflect.Pointer:
			t = t.Elem()
			continue
		case reflect.Slice, reflect.Array:
			t, p = t.Elem(), p.Items
			continue
		case reflect.Map:
			t, p = t.Elem(), p.AdditionalProperties
			continue
		}
		break
	}
	if p == nil {
		return fmt.Errorf("field %s: enum on a value without a schema", f.Name)
	}
	var values []any
	for _, v := range strings.Split(list, ",") {
		var (
			value any = v
			err   error
		)
		switch t.Kind() {
		case reflect.String:
		case reflect.Bool:
			value, err = strconv.ParseBool(v)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			value, err = strconv.ParseFloat(v, 64)
		default:
			return fmt.Errorf("field %s: enum on a %v, which is not a string, number or bool", f.Name, t)
		}
		if err != nil {
			return fmt.Errorf("field %s: enum value %q is not a %v", f.Name, v, t)
		}
		values = append(values, value)
	}
	if acceptsNull(p) && p.Type == "" && len(p.Types) > 0 {
		values = append(values, nil) // a pointer's null stays allowed
	}
	p.Enum = values
	return nil
}
