package schemas

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type provesArgs struct {
	City  string   `json:"city"`
	Unit  string   `json:"unit,omitempty" enum:"c,f"`
	Days  int      `json:"days"`
	Tags  []string `json:"tags,omitempty"`
	Inner *struct {
		N float64 `json:"n"`
	} `json:"inner,omitempty"`
	Scores map[string]int `json:"scores,omitempty"`
}

// provesSchemas are the schemas the fuzz target checks arguments against:
// an inferred one, which the checker reads whole, and given ones, some of
// which it does not.
func provesSchemas(tb testing.TB) []*Args {
	tb.Helper()
	given := func(raw string) *Args {
		var s jsonschema.Schema
		require.NoError(tb, json.Unmarshal([]byte(raw), &s))
		c := Compile(&s)
		require.NoError(tb, c.Err)
		return c
	}
	inferred := ArgsOf(reflect.TypeFor[provesArgs]())
	require.NoError(tb, inferred.Err)
	return []*Args{
		inferred,
		given(`{"type":"object","properties":{"a":{"type":"integer","minimum":1,"maximum":9},"b":{"type":["string","null"]}},"required":["a"]}`),
		given(`{"type":"object","properties":{"v":{"anyOf":[{"type":"integer"},{"type":"array","items":{"type":"boolean"},"minItems":1,"maxItems":2}]}},"additionalProperties":{"const":true}}`),
		given(`{"type":"object","properties":{"s":{"type":"string","pattern":"^a"}}}`), // the checker does not read pattern
	}
}

// TestProvesValidArguments: the arguments a model usually sends are proved
// valid without the validator, for an inferred schema; invalid ones, or a
// schema with a keyword the checker does not read, are left to it.
func TestProvesValidArguments(t *testing.T) {
	s := provesSchemas(t)
	inferred, given, anyOf, pattern := s[0], s[1], s[2], s[3]
	assert.True(t, inferred.Proves([]byte(`{"city":"Paris","days":3,"unit":"c","tags":["a"],"inner":{"n":1.5},"scores":{"x":2}}`)))
	assert.True(t, given.Proves([]byte(`{"a":2,"b":null}`)))
	assert.True(t, anyOf.Proves([]byte(`{"v":[true],"w":true}`)))
	for _, args := range []string{
		`{"city":"Paris"}`,                        // days missing
		`{"city":"Paris","days":3,"unit":"k"}`,    // not in the enum
		`{"city":"Paris","days":3.5}`,             // not an integer
		`{"city":"Paris","days":3,"unit":null}`,   // a null the checker drops, the validator refuses
		`{"city":"Paris","days":3,"country":"F"}`, // unknown field
		`{"city":"Paris","days":3`,                // not JSON
	} {
		assert.False(t, inferred.Proves([]byte(args)), args)
	}
	assert.False(t, given.Proves([]byte(`{"a":10}`)))
	assert.False(t, anyOf.Proves([]byte(`{"v":[1]}`)))
	assert.False(t, pattern.Proves([]byte(`{"s":"abc"}`)), "a schema the checker does not read whole")
	assert.False(t, (*Args)(nil).Proves([]byte(`{}`)))
}

// FuzzArgsProves: arguments the checker proves valid, the validator passes
// too, so that skipping it changes nothing.
func FuzzArgsProves(f *testing.F) {
	for _, seed := range []string{
		`{"city":"Paris","days":3,"unit":"c","tags":["a"],"inner":{"n":1.5},"scores":{"x":2}}`,
		`{"city":"Paris","days":3e0,"inner":{"n":null}}`,
		`{"a":2,"b":null}`, `{"a":1.0}`, `{"a":0}`,
		`{"v":[true,false],"w":true}`, `{"v":3,"w":false}`, `{"v":[]}`,
		`{"s":"abc"}`, `{"city":"\ud800","days":-0}`, `{"a":1,"a":"x"}`, `[]`, `null`,
	} {
		f.Add([]byte(seed))
	}
	schemas := provesSchemas(f)
	f.Fuzz(func(t *testing.T, args []byte) {
		for i, s := range schemas {
			if !s.Proves(args) {
				continue
			}
			var v any
			require.NoError(t, json.Unmarshal(args, &v), "schema %d", i)
			require.NoError(t, s.Validator().Validate(v), "schema %d: %s", i, args)
		}
	})
}
