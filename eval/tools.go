package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// ToolCalled passes a run that called the tool name at least once.
func ToolCalled(name string) Evaluator {
	return ToolCalledWith(name, nil)
}

// ToolCalledWith passes a run that called the tool name at least once with
// arguments holding args. Each key of args must have a value equal to it as
// JSON. Other arguments may be there too.
func ToolCalledWith(name string, args map[string]any) Evaluator {
	want := normalize(args)
	return Func("tool_called", func(_ context.Context, out *Output) (Score, error) {
		var seen []string
		for _, r := range out.Result.ToolCalls {
			if r.Call.Name != name {
				continue
			}
			if matches(r.Call.Arguments, want) {
				return pass(fmt.Sprintf("called %s(%s)", name, r.Call.Arguments)), nil
			}
			seen = append(seen, r.Call.Arguments)
		}
		if len(seen) == 0 {
			return fail(fmt.Sprintf("%s was not called (calls: %s)", name, callNames(out))), nil
		}
		return fail(fmt.Sprintf("%s was called with %s, not with arguments holding %s",
			name, strings.Join(seen, ", "), mustJSON(args))), nil
	})
}

// ToolNotCalled passes a run that never called the tool name.
func ToolNotCalled(name string) Evaluator {
	return Func("tool_not_called", func(_ context.Context, out *Output) (Score, error) {
		n := 0
		for _, r := range out.Result.ToolCalls {
			if r.Call.Name == name {
				n++
			}
		}
		return verdict(n == 0, name+" was not called", fmt.Sprintf("%s was called %d times", name, n)), nil
	})
}

// matches reports whether the JSON object args holds every key of want
// with an equal value.
func matches(args string, want map[string]any) bool {
	if len(want) == 0 {
		return true
	}
	var got map[string]any
	if json.Unmarshal([]byte(args), &got) != nil {
		return false
	}
	for k, v := range want {
		if !reflect.DeepEqual(got[k], v) {
			return false
		}
	}
	return true
}

// normalize returns args as JSON decodes them (numbers as float64), so
// that they compare with decoded arguments.
func normalize(args map[string]any) map[string]any {
	if args == nil {
		return nil
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(mustJSON(args)), &out); err != nil {
		return maps.Clone(args)
	}
	return out
}

// callNames lists the tools a run called, in order, or "none".
func callNames(out *Output) string {
	var names []string
	for _, r := range out.Result.ToolCalls {
		names = append(names, r.Call.Name)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(slices.Compact(names), ", ")
}

// mustJSON is v as JSON, or its Go form when it has none.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
