package schemas

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

// maxSchemaNodes bounds the schemas a portable schema is made of. $refs used
// again and again so cannot blow a small schema up.
const maxSchemaNodes = 10000

// Portable rewrites a schema into the portable subset. Local $refs are inlined,
// and const and oneOf spelled with enum and anyOf. A type list with "null" is
// made nullable. Other keywords are dropped. A recursive schema cannot be
// inlined and is an error.
func Portable(schema map[string]any) (map[string]any, error) {
	r := &rewriter{defs: map[string]any{}, budget: maxSchemaNodes}
	for _, key := range []string{"$defs", "definitions"} {
		if d, ok := schema[key].(map[string]any); ok {
			for name, v := range d {
				r.defs["#/"+key+"/"+name] = v
			}
		}
	}
	out, err := r.schema(schema, 0)
	if err != nil {
		return nil, fmt.Errorf("making the schema portable: %w", err)
	}
	return out, nil
}

// A rewriter makes one schema portable. It holds the definitions its $refs
// point to, and how many more schemas it may write.
type rewriter struct {
	defs   map[string]any
	budget int
}

// schema returns the portable form of s, depth $refs and subschemas deep.
func (r *rewriter) schema(s map[string]any, depth int) (map[string]any, error) {
	if depth > maxSchemaDepth {
		return nil, errors.New("recursive $ref")
	}
	if r.budget--; r.budget < 0 {
		return nil, fmt.Errorf("more than %d schemas once its $refs are inlined", maxSchemaNodes)
	}
	if ref, ok := s["$ref"].(string); ok {
		return r.ref(ref, s, depth)
	}
	out := make(map[string]any, len(s))
	// In key order, so the output does not depend on the map's. A later keyword
	// (oneOf, then a type list) replaces an earlier anyOf.
	for _, k := range slices.Sorted(maps.Keys(s)) {
		if err := r.keyword(out, k, s[k], depth); err != nil {
			return nil, err
		}
	}
	if v, ok := s["const"]; ok {
		out["enum"] = []any{v} // after the loop, so that it wins over an enum
	}
	return out, nil
}

// ref inlines the definition a $ref points to. The keywords beside the $ref,
// such as a description, win over the definition's.
func (r *rewriter) ref(ref string, s map[string]any, depth int) (map[string]any, error) {
	target, ok := r.defs[ref].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("unresolvable $ref %q", ref)
	}
	merged := maps.Clone(target)
	for k, v := range s {
		if k != "$ref" {
			merged[k] = v
		}
	}
	return r.schema(merged, depth+1)
}

// keyword writes the portable form of one keyword of a schema to out.
func (r *rewriter) keyword(out map[string]any, k string, v any, depth int) (err error) {
	switch k {
	case "const":
		// written last, by schema
	case "anyOf", "oneOf":
		out["anyOf"], err = r.alternatives(k, v, depth)
	case "items":
		err = r.items(out, v, depth)
	case "properties":
		out[k], err = r.properties(v, depth)
	case "type":
		portableType(out, v)
	default:
		if slices.Contains(portableKeywords, k) {
			out[k] = v
		}
	}
	return err
}

// alternatives rewrites the list of an anyOf or oneOf; false, an
// alternative nothing matches, is left out.
func (r *rewriter) alternatives(k string, v any, depth int) ([]any, error) {
	list, _ := v.([]any)
	alts := make([]any, 0, len(list))
	for _, alt := range list {
		m, ok := subschema(alt)
		if !ok {
			return nil, fmt.Errorf("%s holds a non-schema", k)
		}
		if m == nil {
			continue
		}
		p, err := r.schema(m, depth+1)
		if err != nil {
			return nil, err
		}
		alts = append(alts, p)
	}
	return alts, nil
}

// items rewrites the schema of an array's items. The tuple forms have no
// portable spelling and are dropped; false, no item allowed, is maxItems 0.
func (r *rewriter) items(out map[string]any, v any, depth int) error {
	m, ok := subschema(v)
	switch {
	case !ok:
		return nil
	case m == nil:
		out["maxItems"] = 0
		return nil
	}
	p, err := r.schema(m, depth+1)
	if err != nil {
		return err
	}
	out["items"] = p
	return nil
}

// properties rewrites the schema of each property; false, a property that
// must not be given, is left out.
func (r *rewriter) properties(v any, depth int) (map[string]any, error) {
	props, _ := v.(map[string]any)
	out := make(map[string]any, len(props))
	for name, ps := range props {
		m, ok := subschema(ps)
		if !ok {
			return nil, fmt.Errorf("property %q is not a schema", name)
		}
		if m == nil {
			continue
		}
		p, err := r.schema(m, depth+1)
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		out[name] = p
	}
	return out, nil
}

// portableType writes a type. A list of types is spelled with nullable for
// "null", and with anyOf when more than one other type remains.
func portableType(out map[string]any, v any) {
	list, ok := v.([]any)
	if !ok {
		out["type"] = v
		return
	}
	var types []string
	for _, t := range list {
		if t == "null" {
			out["nullable"] = true
		} else if ts, ok := t.(string); ok {
			types = append(types, ts)
		}
	}
	switch len(types) {
	case 0:
	case 1:
		out["type"] = types[0]
	default:
		alts := make([]any, len(types))
		for i, t := range types {
			alts[i] = map[string]any{"type": t}
		}
		out["anyOf"] = alts
	}
}

// subschema reads a schema where one is expected, boolean forms included. true,
// which anything matches, reads as {}. false, which nothing matches, reads as
// nil. ok is false for a value that is no schema.
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
