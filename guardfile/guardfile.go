// Package guardfile reads a guards file, JSON or YAML, into the
// [robby.Guard]s it describes ([robby.WithGuards]):
//
//	{"guards": [
//	  {"on": "output", "match": "sk-[A-Za-z0-9]{20,}", "action": "redact", "replacement": "[secret]"},
//	  {"on": "tool_result", "match": "(?i)ignore (all )?previous instructions", "action": "block",
//	   "message": "The tool's result looked like an instruction to the assistant and was withheld."},
//	  {"on": "tool_call", "tool": "shell*", "match": "rm\\s+-rf", "action": "block"},
//	  {"on": "input", "judge": "Is this message about our product? Answer yes or no.", "model": "judge-model", "block_if": "no"}]}
//
// Each guard is either a pattern ("match", a Go regular expression, with an
// "action": "block" or "redact") or an LLM judge ("judge", its rubric, with
// "block_if", the answer that blocks). Its fields:
//
//   - "on": the boundary, "input", "tool_call", "tool_result" or "output".
//   - "name": the name errors, events and logs use; the default is the
//     boundary and the guard's number there, such as "output#1".
//   - "tool": at the tool boundaries, a pattern of the tools' names
//     ([path.Match]), such as "shell*"; none for all.
//   - "match", "action", "replacement" (a redaction's; default
//     "[redacted]") and "max_match" (the bytes a match of an unbounded
//     pattern may have, default 1024).
//   - "judge", "model" (default the agent's), "block_if", "allow_if"
//     (default the opposite of a "yes" or "no" in "block_if"), and
//     "base_url" and "api_key" for a model that the agent's endpoint does
//     not serve.
//   - "message": what the model reads of a blocked tool call or result,
//     and what a served client reads of a blocked run.
//   - "timeout": how long a judge may take, such as "10s" (default 30s).
//     A judge that errs, times out or answers anything else fails closed.
//   - "paragraphs": true has an output judge or blocking pattern judge
//     each paragraph as it ends rather than the whole answer.
//   - "beside": true has an input guard that blocks run beside the first
//     model request, which it cancels when it blocks, rather than before.
//
// See docs/GUARDS.md for what each boundary guarantees. A field the format
// does not have is an error. ${VAR}, ${env:VAR} and ${VAR:-default} in
// "base_url" and "api_key" are the environment's variables: a key stays
// out of the file. Their values never show in an error, nor in a judge's
// reasons for failing.
package guardfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/robby-go/robby"
)

// Load reads the guards of the file at path. An error names the file and,
// for a mistake in it, the line, the guard and the field ([*Error]).
func Load(path string) ([]robby.Guard, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			err = pe.Err // the path is in the prefix already
		}
		return nil, fmt.Errorf("guards file %s: %w", path, err)
	}
	return Parse(path, data)
}

// Parse reads the guards of a file's data; path names it in errors. JSON
// is read as the YAML it is.
func Parse(path string, data []byte) ([]robby.Guard, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New(`empty: give a "guards" list`)
		}
		return nil, fmt.Errorf("guards file %s: %w", path, err)
	}
	list, err := guardList(&doc)
	if err != nil {
		return nil, fmt.Errorf("guards file %s: %w", path, err)
	}
	guards := make([]robby.Guard, 0, len(list.Content))
	for i, n := range list.Content {
		r, err := readRule(n)
		if err == nil {
			var g robby.Guard
			if g, err = r.guard(); err == nil {
				guards = append(guards, g)
				continue
			}
		}
		e, ok := errors.AsType[*Error](err)
		if !ok {
			e = &Error{Line: n.Line, Err: err}
		}
		e.Path, e.Index, e.Name = path, i+1, r.Name
		return nil, e
	}
	return guards, nil
}

// guardList returns the sequence of guards of the document doc.
func guardList(doc *yaml.Node) (*yaml.Node, error) {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New(`the file must be an object with a "guards" list`)
	}
	top := doc.Content[0]
	var list *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if k.Value != "guards" {
			return nil, fmt.Errorf("line %d: %q: not a field of a guards file (it has \"guards\")", k.Line, k.Value)
		}
		list = v
	}
	switch {
	case list == nil:
		return nil, errors.New(`no "guards" list`)
	case list.Kind != yaml.SequenceNode:
		return nil, fmt.Errorf(`line %d: "guards" must be a list`, list.Line)
	case len(list.Content) == 0:
		return nil, fmt.Errorf(`line %d: "guards" is empty: a guards file that guards nothing is a mistake`, list.Line)
	}
	return list, nil
}

// An Error is a mistake in a guards file, naming where it is. It never
// quotes a value read from the environment.
type Error struct {
	Path  string
	Line  int    // the line of the field, or of the guard
	Index int    // the guard's number in the list, from 1
	Name  string // the guard's name, if it has one
	Field string // "" for the guard as a whole
	Err   error
}

func (e *Error) Error() string {
	s := fmt.Sprintf("guards file %s: line %d: guard %d", e.Path, e.Line, e.Index)
	if e.Name != "" {
		s += fmt.Sprintf(" (%q)", e.Name)
	}
	if e.Field != "" {
		s += fmt.Sprintf(": %q", e.Field)
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }
