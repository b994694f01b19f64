package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"go.yaml.in/yaml/v3"

	"github.com/robby-go/robby"
)

// maxLine bounds a line of a JSONL dataset.
const maxLine = 16 << 20

// Load reads a dataset from a file: JSONL (one case a line, .jsonl or
// .json) or YAML (.yaml, .yml). judge is the agent of the file's judge
// checks; nil when it has none. The dataset is named for the file. See
// docs/EVALS.md for the format: a line such as
//
//	{"name": "capital", "input": "What is the capital of Norway?", "expected": "Oslo",
//	 "checks": [{"contains": "Oslo"}, {"max_turns": 3}, {"tool_called": "lookup"}, {"judge": "Names Oslo."}]}
func Load(path string, judge *robby.Agent) (Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return Dataset{}, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	var d Dataset
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".jsonl", ".json", ".ndjson":
		d, err = ReadJSONL(f, judge)
	case ".yaml", ".yml":
		d, err = ReadYAML(f, judge)
	default:
		return Dataset{}, fmt.Errorf("eval: %s: give a .jsonl or .yaml file, not %q", path, ext)
	}
	if err != nil {
		return Dataset{}, fmt.Errorf("eval: %s:%w", path, err)
	}
	if d.Name == "" {
		d.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return d, nil
}

// ReadJSONL reads a dataset of one case a line; blank lines and lines
// starting with # or // are skipped. Errors name the line.
func ReadJSONL(r io.Reader, judge *robby.Agent) (Dataset, error) {
	var d Dataset
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' || bytes.HasPrefix(line, []byte("//")) {
			continue
		}
		c, err := decodeCase(line, judge)
		if err != nil {
			return Dataset{}, fmt.Errorf("%d: %w", n, err)
		}
		if c.Name == "" {
			c.Name = fmt.Sprintf("line %d", n)
		}
		d.Cases = append(d.Cases, c)
	}
	if err := sc.Err(); err != nil {
		return Dataset{}, fmt.Errorf(" %w", err)
	}
	return d, nil
}

// ReadYAML reads a dataset from YAML: a list of cases, or a mapping with
// "name", "checks" (those of every case) and "cases". Errors name the
// case.
func ReadYAML(r io.Reader, judge *robby.Agent) (Dataset, error) {
	var doc any
	if err := yaml.NewDecoder(io.LimitReader(r, maxLine)).Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return Dataset{}, fmt.Errorf(" %w", err)
	}
	var top struct {
		Name   string            `json:"name"`
		Checks []json.RawMessage `json:"checks"`
		Cases  []json.RawMessage `json:"cases"`
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return Dataset{}, fmt.Errorf(" %w", err)
	}
	if _, isList := doc.([]any); isList {
		err = json.Unmarshal(b, &top.Cases)
	} else {
		err = strictUnmarshal(b, &top)
	}
	if err != nil {
		return Dataset{}, fmt.Errorf(" %w", err)
	}
	d := Dataset{Name: top.Name}
	if d.Evaluators, err = checks(top.Checks, judge); err != nil {
		return Dataset{}, fmt.Errorf(" checks: %w", err)
	}
	for i, raw := range top.Cases {
		c, err := decodeCase(raw, judge)
		if err != nil {
			return Dataset{}, fmt.Errorf(" case %d: %w", i+1, err)
		}
		if c.Name == "" {
			c.Name = fmt.Sprintf("case %d", i+1)
		}
		d.Cases = append(d.Cases, c)
	}
	return d, nil
}

// fileCase is a case as a file writes it.
type fileCase struct {
	Name          string            `json:"name"`
	Input         json.RawMessage   `json:"input"` // a string, or a list of messages
	Messages      []fileMessage     `json:"messages"`
	Expected      string            `json:"expected"`
	ExpectedValue any               `json:"expected_value"`
	Metadata      map[string]any    `json:"metadata"`
	Checks        []json.RawMessage `json:"checks"`
}

type fileMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func decodeCase(b []byte, judge *robby.Agent) (Case, error) {
	var fc fileCase
	if err := strictUnmarshal(b, &fc); err != nil {
		return Case{}, err
	}
	c := Case{Name: fc.Name, Expected: fc.Expected, ExpectedValue: fc.ExpectedValue, Metadata: fc.Metadata}
	msgs := fc.Messages
	if len(fc.Input) > 0 && json.Unmarshal(fc.Input, &c.Input) != nil {
		var more []fileMessage
		if err := json.Unmarshal(fc.Input, &more); err != nil {
			return Case{}, errors.New(`"input" is neither text nor a list of {"role", "content"} messages`)
		}
		msgs = append(msgs, more...)
	}
	for _, m := range msgs {
		msg, err := m.chat()
		if err != nil {
			return Case{}, err
		}
		c.Messages = append(c.Messages, msg)
	}
	var err error
	if c.Evaluators, err = checks(fc.Checks, judge); err != nil {
		return Case{}, err
	}
	return c, nil
}

func (m fileMessage) chat() (openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case "user":
		return openai.UserMessage(m.Content), nil
	case "assistant":
		return openai.AssistantMessage(m.Content), nil
	case "system":
		return openai.SystemMessage(m.Content), nil
	}
	return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("message role %q: give user, assistant or system", m.Role)
}

// strictUnmarshal decodes b into v, refusing unknown fields: a typo in a
// dataset is an error, not a check silently left out.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// checkNames are the checks a file may name, as docs/EVALS.md lists them.
var checkNames = []string{"equals", "contains", "regex", "valid_json", "equals_value", "tool_called", "tool_not_called",
	"max_turns", "max_tokens", "max_cost", "max_seconds", "judge", "agent", "handoff", "guard"}

// checks makes the evaluators of a file's checks: each an object of one
// key, the check's name, whose value is its argument.
func checks(raws []json.RawMessage, judge *robby.Agent) ([]Evaluator, error) {
	var evs []Evaluator
	for i, raw := range raws {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil || len(m) != 1 {
			return nil, fmt.Errorf("check %d: want an object of one key, such as {\"contains\": \"Oslo\"}", i+1)
		}
		for name, arg := range m {
			ev, err := check(name, arg, judge)
			if err != nil {
				return nil, fmt.Errorf("check %d (%s): %w", i+1, name, err)
			}
			evs = append(evs, ev)
		}
	}
	return evs, nil
}

// check makes the evaluator of one check.
func check(name string, arg json.RawMessage, judge *robby.Agent) (Evaluator, error) {
	var (
		s   string
		n   float64
		err error
	)
	switch name {
	case "equals", "contains", "regex", "tool_not_called", "judge", "agent", "handoff", "guard":
		if err = json.Unmarshal(arg, &s); err == nil && s == "" && (name == "agent" || name == "handoff") {
			err = errors.New("want an agent's name")
		}
	case "max_turns", "max_tokens", "max_cost", "max_seconds":
		if err = json.Unmarshal(arg, &n); err == nil && n < 0 {
			err = errors.New("a limit cannot be negative")
		}
	}
	if err != nil {
		return nil, err
	}
	switch name {
	case "equals":
		return Equals(s), nil
	case "contains":
		return Contains(s), nil
	case "regex":
		re, err := regexp.Compile(s)
		if err != nil {
			return nil, err
		}
		return Regex(re), nil
	case "tool_not_called":
		return ToolNotCalled(s), nil
	case "agent":
		return AnsweredBy(s), nil
	case "handoff":
		return HandedOffTo(s), nil
	case "guard":
		return guardOf(s)
	case "judge":
		if judge == nil {
			return nil, errors.New("no judge agent was given")
		}
		return Judge(judge, s), nil
	case "max_turns":
		return MaxTurns(int(n)), nil
	case "max_tokens":
		return MaxTokens(int64(n)), nil
	case "max_cost":
		return MaxCost(n), nil
	case "max_seconds":
		return MaxDuration(time.Duration(n * float64(time.Second))), nil
	}
	return structuredCheck(name, arg)
}

// structuredCheck makes the evaluators whose argument is an object.
func structuredCheck(name string, arg json.RawMessage) (Evaluator, error) {
	switch name {
	case "valid_json":
		var schema map[string]any
		if err := json.Unmarshal(arg, &schema); err != nil {
			return nil, fmt.Errorf("want a JSON Schema object: %w", err)
		}
		return ValidJSON(schema)
	case "equals_value":
		var v any
		if err := json.Unmarshal(arg, &v); err != nil {
			return nil, err
		}
		return EqualsValue(v), nil
	case "tool_called":
		var tool string
		if json.Unmarshal(arg, &tool) == nil {
			return ToolCalled(tool), nil
		}
		var spec struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		}
		if err := strictUnmarshal(arg, &spec); err != nil || spec.Name == "" {
			return nil, errors.New(`want a tool's name, or {"name": ..., "arguments": {...}}`)
		}
		return ToolCalledWith(spec.Name, spec.Arguments), nil
	}
	return nil, fmt.Errorf("unknown check: give one of %s", strings.Join(slices.Sorted(slices.Values(checkNames)), ", "))
}
