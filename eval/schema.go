package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// ValidJSON passes an answer that is JSON valid for schema. The answer is its
// text (inside a code fence, if it is in one), or the value of a [Typed] run.
// It fails to build when schema is not a JSON Schema.
func ValidJSON(schema map[string]any) (Evaluator, error) {
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("eval: schema: %w", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("eval: not a JSON Schema: %w", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("eval: schema: %w", err)
	}
	return Func("valid_json", func(_ context.Context, out *Output) (Score, error) {
		var v any
		if err := json.Unmarshal(answerJSON(out), &v); err != nil {
			return fail("the answer is not JSON: " + err.Error()), nil
		}
		if err := rs.Validate(v); err != nil {
			return fail("the answer does not fit the schema: " + err.Error()), nil
		}
		return pass("the answer fits the schema"), nil
	}), nil
}

// ValidFor passes an answer that decodes strictly into a T. It must be JSON
// valid for T's schema (as [jsonschema.For] infers it), with no unknown field.
func ValidFor[T any]() Evaluator {
	rs, schemaErr := resolvedFor[T]()
	name := fmt.Sprintf("valid_for %T", *new(T))
	return Func("valid_for", func(_ context.Context, out *Output) (Score, error) {
		if schemaErr != nil {
			return Score{}, fmt.Errorf("%s: %w", name, schemaErr)
		}
		raw := answerJSON(out)
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return fail("the answer is not JSON: " + err.Error()), nil
		}
		if err := rs.Validate(v); err != nil {
			return fail(fmt.Sprintf("the answer is not a %T: %v", *new(T), err)), nil
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var t T
		if err := dec.Decode(&t); err != nil {
			return fail(fmt.Sprintf("the answer is not a %T: %v", t, err)), nil
		}
		return pass(fmt.Sprintf("the answer is a %T", t)), nil
	})
}

func resolvedFor[T any]() (*jsonschema.Resolved, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, err
	}
	return s.Resolve(nil)
}

// EqualsExpectedValue passes a [Typed] run whose value equals the case's
// ExpectedValue. Both are compared as JSON: a struct and the map of its fields
// are equal.
func EqualsExpectedValue() Evaluator {
	return Func("equals_value", func(_ context.Context, out *Output) (Score, error) {
		return equalsValue(out, out.Case.ExpectedValue), nil
	})
}

// EqualsValue passes a [Typed] run whose value equals want as JSON.
func EqualsValue(want any) Evaluator {
	return Func("equals_value", func(_ context.Context, out *Output) (Score, error) {
		return equalsValue(out, want), nil
	})
}

func equalsValue(out *Output, value any) Score {
	want := mustJSON(value)
	if out.Value == nil {
		return fail("no typed value to compare with " + want)
	}
	got := mustJSON(out.Value)
	return verdict(jsonEqual(got, want), "the value is "+want, "the value "+got+" is not "+want)
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	return reflect.DeepEqual(x, y)
}

// answerJSON is the JSON of out: its typed value, else its text without
// the code fence models often put around JSON.
func answerJSON(out *Output) []byte {
	if out.Value != nil {
		return []byte(mustJSON(out.Value))
	}
	text := strings.TrimSpace(out.Text)
	if rest, ok := strings.CutPrefix(text, "```"); ok {
		if _, body, ok := strings.Cut(rest, "\n"); ok {
			text = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(body), "```"))
		}
	}
	return []byte(text)
}
