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
	Params   shared.FunctionParameters
	resolved *jsonschema.Resolved
	Err      error
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

// compileSchema resolves a schema once, for validation, and keeps its JSON
// form for the requests.
func Compile(s *jsonschema.Schema) *Args {
	resolved, err := s.Resolve(nil)
	if err != nil {
		return &Args{Err: fmt.Errorf("schema: %w", err)}
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return &Args{Err: fmt.Errorf("schema: %w", err)}
	}
	var params shared.FunctionParameters
	if err := json.Unmarshal(raw, &params); err != nil {
		return &Args{Err: fmt.Errorf("schema: %w", err)}
	}
	return &Args{Params: params, resolved: resolved}
}

// validator returns the resolved schema, as [Tool] keeps it.
func (c *Args) Validator() *jsonschema.Resolved { return c.resolved }

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
