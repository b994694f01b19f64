package schemas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/openai/openai-go/v3/shared"
)

// A Args is the schema of a tool's arguments in every form robby
// uses it.
type Args struct {
	Params     shared.FunctionParameters
	ParamsJSON json.RawMessage // Params as openai-go encodes them in a request
	schema     *jsonschema.Schema
	resolved   *jsonschema.Resolved
	complete   bool // the checker reads every keyword the schema has
	Err        error
}

// argSchemas holds the compiled schema of each argument type, as encoding/json
// caches its encoders. Inferring and resolving a schema costs hundreds of
// allocations. Programs build the same tools again and again (an agent per
// request). Entries are immutable.
var argSchemas sync.Map // reflect.Type → *Args

func ArgsOf(t reflect.Type) *Args {
	if s, ok := argSchemas.Load(t); ok {
		return s.(*Args)
	}
	schema, err := Infer(t)
	if err == nil && schema.Type != "object" {
		err = fmt.Errorf("arguments type %v is not a struct or map", t)
	}
	s := &Args{Err: err}
	if err == nil {
		s = Compile(schema)
	}
	actual, _ := argSchemas.LoadOrStore(t, s)
	return actual.(*Args)
}

// Compile resolves a schema once, for validation, and keeps its JSON
// form for the requests.
func Compile(s *jsonschema.Schema) *Args {
	c := Resolve(s)
	if c.Err != nil {
		return c
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return &Args{Err: fmt.Errorf("schema: %w", err)}
	}
	var params shared.FunctionParameters
	if err := json.Unmarshal(raw, &params); err != nil {
		return &Args{Err: fmt.Errorf("schema: %w", err)}
	}
	c.Params = params
	if c.ParamsJSON, err = encodeParams(params); err != nil {
		return &Args{Err: fmt.Errorf("schema: %w", err)}
	}
	return c
}

// encodeParams returns params as openai-go encodes them in a tool's
// definition. The bytes are taken from its own encoding.
func encodeParams(params shared.FunctionParameters) (json.RawMessage, error) {
	b, err := shared.FunctionDefinitionParam{Parameters: params}.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var def struct {
		Parameters json.RawMessage `json:"parameters"`
	}
	err = json.Unmarshal(b, &def)
	return def.Parameters, err
}

// Resolve resolves a schema once, for validation. It keeps no JSON form.
func Resolve(s *jsonschema.Schema) *Args {
	resolved, err := s.Resolve(nil)
	if err != nil {
		return &Args{Err: fmt.Errorf("schema: %w", err)}
	}
	return &Args{schema: s, resolved: resolved, complete: checkerReads(s)}
}

// Validator returns the resolved schema, whose failures the model reads.
func (c *Args) Validator() *jsonschema.Resolved { return c.resolved }

// Proves reports whether the checker alone proves args valid. It costs a few
// allocations; the validator costs some forty. The schema must say nothing the
// checker does not read, as with the schemas [NewTool] infers. False says
// nothing: the validator decides then, in the words the model reads.
func (c *Args) Proves(args []byte) bool {
	if c == nil || !c.complete {
		return false
	}
	v, err := decodeAny(args)
	if err != nil {
		return false
	}
	var at [8]step
	ch := checker{at: at[:0]}
	ch.value(c.schema, v)
	// A null the checker dropped is one the validator would refuse.
	return len(ch.failures) == 0 && !ch.nullsDropped
}

// WholeNumbers returns args with whole numbers written as integers, and whether
// there were any. Such numbers are written with a fraction or an exponent (5.0,
// 1e3).
func WholeNumbers(args json.RawMessage) (json.RawMessage, bool) {
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil, false
	}
	changed := false
	var walk func(any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case json.Number:
			if f, err := v.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 && strings.ContainsAny(string(v), ".eE") {
				changed = true
				return json.Number(strconv.FormatInt(int64(f), 10))
			}
		case map[string]any:
			for k, e := range v {
				v[k] = walk(e)
			}
		case []any:
			for i, e := range v {
				v[i] = walk(e)
			}
		}
		return v
	}
	v = walk(v)
	if !changed {
		return nil, false
	}
	b, err := json.Marshal(v)
	return b, err == nil
}
