package schemas

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzPortableSchema rewrites a tool's JSON Schema into the portable
// subset: a success must encode, within 1 MiB and 64 times the input (an
// MCP server's schema must not make robby inline $refs without bound),
// keep nothing but portable keywords in schema positions ($ref, $defs and
// additionalProperties among the ones dropped), and not depend on map
// order.
func FuzzPortableSchema(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var schema map[string]any
		if json.Unmarshal(data, &schema) != nil || schema == nil {
			return
		}
		out, err := Portable(schema)
		if err != nil {
			require.Nil(t, out)
			return
		}
		b, err := json.Marshal(out)
		require.NoError(t, err)
		require.LessOrEqual(t, len(b), 1<<20+64*len(data), "a %d-byte schema made a %d-byte one: inlining $refs must not amplify without bound", len(data), len(b))
		var decoded map[string]any
		require.NoError(t, json.Unmarshal(b, &decoded))
		fuzzCheckPortable(t, "#", decoded, !fuzzEmptyAlternatives(schema))
		// The keywords are read in map order: the result must not depend
		// on it. A small map is ranged over in the order its keys went in,
		// from a random start: copies filled in random orders make eight
		// runs see both orders of two keys but about once in 128 times.
		for range 8 {
			again, err := Portable(fuzzShuffled(schema).(map[string]any))
			require.NoError(t, err)
			c, err := json.Marshal(again)
			require.NoError(t, err)
			require.JSONEq(t, string(b), string(c), "the result depends on map order")
		}
	})
}

// fuzzCheckPortable walks the schema positions of s: the value of
// properties' entries, items and anyOf's alternatives. The values of
// enum, default and the like are data, and may hold any key. An anyOf
// must offer an alternative (an empty one matches nothing, and Gemini
// refuses it) unless strict is false: the input had an empty one.
func fuzzCheckPortable(t *testing.T, path string, s map[string]any, strict bool) {
	t.Helper()
	for k, v := range s {
		require.True(t, slices.Contains(portableKeywords, k), "%s: keyword %q kept", path, k)
		switch k {
		case "properties":
			props, ok := v.(map[string]any)
			require.True(t, ok, "%s/properties is not an object", path)
			for name, p := range props {
				m, ok := p.(map[string]any)
				require.True(t, ok, "%s/properties/%s is not a schema", path, name)
				fuzzCheckPortable(t, path+"/properties/"+name, m, strict)
			}
		case "items":
			m, ok := v.(map[string]any)
			require.True(t, ok, "%s/items is not a schema", path)
			fuzzCheckPortable(t, path+"/items", m, strict)
		case "anyOf":
			alts, ok := v.([]any)
			require.True(t, ok, "%s/anyOf is not a list", path)
			require.True(t, len(alts) > 0 || !strict, "%s/anyOf is empty", path)
			for _, a := range alts {
				m, ok := a.(map[string]any)
				require.True(t, ok, "%s/anyOf holds a non-schema", path)
				fuzzCheckPortable(t, path+"/anyOf", m, strict)
			}
		}
	}
}

// fuzzEmptyAlternatives reports whether v holds, anywhere, an anyOf or
// oneOf that is not a list of at least one alternative.
func fuzzEmptyAlternatives(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if l, ok := e.([]any); (k == "anyOf" || k == "oneOf") && (!ok || len(l) == 0) {
				return true
			}
			if fuzzEmptyAlternatives(e) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(v, fuzzEmptyAlternatives)
	}
	return false
}

// fuzzShuffled returns a deep copy of v whose maps had their keys put in
// in a random order.
func fuzzShuffled(v any) any {
	switch v := v.(type) {
	case map[string]any:
		keys := slices.Collect(maps.Keys(v))
		rand.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		m := make(map[string]any, len(v))
		for _, k := range keys {
			m[k] = fuzzShuffled(v[k])
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = fuzzShuffled(e)
		}
		return l
	}
	return v
}

func TestPortableSchema(t *testing.T) {
	var schema map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type": "object",
		"additionalProperties": false,
		"$defs": {"unit": {"type": "string", "enum": ["c", "f"]}},
		"properties": {
			"unit": {"$ref": "#/$defs/unit", "description": "the unit"},
			"mode": {"const": "fast"},
			"note": {"type": ["string", "null"]},
			"either": {"oneOf": [{"type": "string"}, {"type": "integer", "exclusiveMinimum": 0}]},
			"tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}},
			"anything": true,
			"never": false,
			"none": {"type": "array", "items": false},
			"some": {"anyOf": [false, {"type": "string"}, true]}
		},
		"required": ["unit"]
	}`), &schema))
	got, err := Portable(schema)
	require.NoError(t, err)
	want := `{
		"type": "object",
		"properties": {
			"unit": {"type": "string", "enum": ["c", "f"], "description": "the unit"},
			"mode": {"enum": ["fast"]},
			"note": {"type": "string", "nullable": true},
			"either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
			"tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}},
			"anything": {},
			"none": {"type": "array", "maxItems": 0},
			"some": {"anyOf": [{"type": "string"}, {}]}
		},
		"required": ["unit"]
	}`
	b, _ := json.Marshal(got)
	assert.JSONEq(t, want, string(b))

	var recursive map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{"type":"object","$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}},"properties":{"head":{"$ref":"#/$defs/n"}}}`), &recursive))
	_, err = Portable(recursive)
	assert.ErrorContains(t, err, "recursive")
}
