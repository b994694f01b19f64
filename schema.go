package robby

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// portableKeywords are the JSON Schema keywords every provider's tool
// schemas accept; Gemini's, the strictest, takes this OpenAPI subset.
var portableKeywords = []string{
	"type", "format", "title", "description", "nullable", "enum", "default",
	"items", "minItems", "maxItems", "properties", "required", "minProperties", "maxProperties",
	"minimum", "maximum", "minLength", "maxLength", "pattern", "anyOf", "propertyOrdering",
}

// maxSchemaDepth bounds the inlining of $refs; deeper means recursive.
const maxSchemaDepth = 32

// maxSchemaNodes bounds the schemas a portable schema is made of, so that
// $refs used again and again cannot blow a small schema up.
const maxSchemaNodes = 10000

// portableSchema rewrites a schema into the portable subset: local $refs
// inlined, const and oneOf spelled with enum and anyOf, a type list with
// "null" made nullable, other keywords dropped. A recursive schema cannot
// be inlined and is an error.
func portableSchema(schema map[string]any) (map[string]any, error) {
	defs := map[string]any{}
	for _, key := range []string{"$defs", "definitions"} {
		if d, ok := schema[key].(map[string]any); ok {
			for name, v := range d {
				defs["#/"+key+"/"+name] = v
			}
		}
	}
	budget := maxSchemaNodes
	out, err := portable(schema, defs, 0, &budget)
	if err != nil {
		return nil, fmt.Errorf("making the schema portable: %w", err)
	}
	return out, nil
}

func portable(s map[string]any, defs map[string]any, depth int, budget *int) (map[string]any, error) {
	if depth > maxSchemaDepth {
		return nil, errors.New("recursive $ref")
	}
	if *budget--; *budget < 0 {
		return nil, fmt.Errorf("more than %d schemas once its $refs are inlined", maxSchemaNodes)
	}
	if ref, ok := s["$ref"].(string); ok {
		target, ok := defs[ref].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("unresolvable $ref %q", ref)
		}
		merged := maps.Clone(target)
		for k, v := range s { // siblings of $ref, such as a description, win
			if k != "$ref" {
				merged[k] = v
			}
		}
		return portable(merged, defs, depth+1, budget)
	}
	out := make(map[string]any, len(s))
	for _, k := range slices.Sorted(maps.Keys(s)) {
		v := s[k]
		switch k {
		case "const":
			// below, so that it wins over an enum
		case "oneOf":
			k = "anyOf"
			fallthrough
		case "anyOf":
			list, _ := v.([]any)
			alts := make([]any, 0, len(list))
			for _, alt := range list {
				m, ok := subschema(alt)
				if !ok {
					return nil, fmt.Errorf("%s holds a non-schema", k)
				}
				if m == nil {
					continue // false: an alternative nothing matches
				}
				p, err := portable(m, defs, depth+1, budget)
				if err != nil {
					return nil, err
				}
				alts = append(alts, p)
			}
			out["anyOf"] = alts
		case "items":
			m, ok := subschema(v)
			if !ok {
				continue // tuple forms have no portable spelling
			}
			if m == nil {
				out["maxItems"] = 0 // false: no item matches
				continue
			}
			p, err := portable(m, defs, depth+1, budget)
			if err != nil {
				return nil, err
			}
			out[k] = p
		case "properties":
			props, _ := v.(map[string]any)
			pout := make(map[string]any, len(props))
			for name, ps := range props {
				m, ok := subschema(ps)
				if !ok {
					return nil, fmt.Errorf("property %q is not a schema", name)
				}
				if m == nil {
					continue // false: a property that must not be given
				}
				p, err := portable(m, defs, depth+1, budget)
				if err != nil {
					return nil, fmt.Errorf("property %q: %w", name, err)
				}
				pout[name] = p
			}
			out[k] = pout
		case "type":
			out[k] = v
			if list, ok := v.([]any); ok {
				var types []string
				for _, t := range list {
					if t == "null" {
						out["nullable"] = true
					} else if ts, ok := t.(string); ok {
						types = append(types, ts)
					}
				}
				delete(out, k)
				if len(types) == 1 {
					out[k] = types[0]
				} else if len(types) > 1 {
					alts := make([]any, len(types))
					for i, t := range types {
						alts[i] = map[string]any{"type": t}
					}
					out["anyOf"] = alts
				}
			}
		default:
			if slices.Contains(portableKeywords, k) {
				out[k] = v
			}
		}
	}
	if v, ok := s["const"]; ok {
		out["enum"] = []any{v}
	}
	return out, nil
}

// subschema reads a schema where one is expected, boolean forms included:
// true, which anything matches, reads as {}; false, which nothing matches,
// as nil. ok is false for a value that is no schema.
func subschema(v any) (m map[string]any, ok bool) {
	switch v := v.(type) {
	case map[string]any:
		return v, true
	case bool:
		if v {
			return map[string]any{}, true
		}
		return nil, true
	}
	return nil, false
}
