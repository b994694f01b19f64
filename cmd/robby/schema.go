package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/robby-go/robby"
)

// schemaFlags are the flags of run and mcp that ask for a typed answer.
type schemaFlags struct {
	file    string
	mode    string
	repairs int
}

var answerModes = map[string]robby.AnswerMode{
	"auto": robby.AnswerAuto, "native": robby.AnswerNative, "tool": robby.AnswerTool, "prompted": robby.AnswerPrompted,
}

// register registers the flags; schemaHelp says what -schema does.
func (f *schemaFlags) register(fs *flag.FlagSet, schemaHelp string) {
	fs.StringVar(&f.file, "schema", "", schemaHelp)
	fs.StringVar(&f.mode, "answer-mode", "auto",
		"with -schema, how the answer is asked for: native (response_format), tool (a final_answer tool), prompted, or auto (native, falling back)")
	fs.IntVar(&f.repairs, "max-repairs", robby.DefaultMaxRepairs, "with -schema, how many times an answer that does not fit is sent back to be repaired")
}

// typedSpec is the typed answer the schema flags ask for.
type typedSpec struct {
	schema  map[string]any // nil without -schema
	mode    robby.AnswerMode
	repairs int
}

// read reads the schema file and checks the flags.
func (f *schemaFlags) read() (typedSpec, error) {
	mode, ok := answerModes[f.mode]
	switch {
	case !ok:
		return typedSpec{}, fmt.Errorf("bad -answer-mode %q: give auto, native, tool or prompted", f.mode)
	case f.repairs < 0:
		return typedSpec{}, fmt.Errorf("-max-repairs is %d: give 0 or more", f.repairs)
	case f.file == "":
		return typedSpec{}, nil
	}
	b, err := os.ReadFile(f.file)
	if err != nil {
		return typedSpec{}, fmt.Errorf("-schema: %w", err)
	}
	var schema map[string]any
	if err := json.Unmarshal(b, &schema); err != nil {
		return typedSpec{}, fmt.Errorf("-schema %s: not a JSON Schema object: %v", f.file, err)
	}
	if t, _ := schema["type"].(string); t != "object" {
		return typedSpec{}, fmt.Errorf(`-schema %s: the answer must be a JSON object: give the schema "type": "object"`, f.file)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return typedSpec{}, fmt.Errorf("-schema %s: not a JSON Schema: %v", f.file, err)
	}
	if _, err := s.Resolve(nil); err != nil {
		return typedSpec{}, fmt.Errorf("-schema %s: %v", f.file, err)
	}
	return typedSpec{schema: schema, mode: mode, repairs: f.repairs}, nil
}

// durable reads the schema of a durable run (robby run -temporal), nil
// without -schema. Such a run asks for the answer natively and makes no
// repair turns: the other modes and -max-repairs are refused.
func (f *schemaFlags) durable(fs *flag.FlagSet) (json.RawMessage, error) {
	typed, err := f.read()
	if err != nil || typed.schema == nil {
		return nil, err
	}
	if typed.mode != robby.AnswerAuto && typed.mode != robby.AnswerNative {
		return nil, usageError{fmt.Errorf("-answer-mode %s does not work with -temporal: a durable run asks natively", f.mode)}
	}
	if visited(fs, "max-repairs") != "" {
		return nil, usageError{errors.New("-max-repairs does not work with -temporal: a durable run makes no repair turns")}
	}
	return json.Marshal(typed.schema)
}

// options returns the run options of a typed run, or none without
// -schema.
func (t typedSpec) options() []robby.RunOption {
	if t.schema == nil {
		return nil
	}
	return []robby.RunOption{robby.WithAnswerSchema(t.schema), robby.WithAnswerMode(t.mode), robby.WithMaxRepairs(t.repairs)}
}

// typedAnswer runs a typed run. The answer, validated, goes to stdout as one
// line of JSON. The tool steps go to stderr, and so does what was wrong with an
// answer that never fitted.
func (s *screen) typedAnswer(ctx context.Context, agent *robby.Agent, prompt string, opts ...robby.RunOption) error {
	stdout, stderr := s.stdout, s.stderr
	for ev, err := range robby.StreamTyped[json.RawMessage](ctx, agent, prompt, opts...) {
		inner, path := ev.Innermost()
		switch {
		case ev.Kind == robby.EventDone:
			s.printSpent(ev.Result)
			s.tree.release()
			return printAnswer(stdout, ev.Value, err)
		case inner.Kind == robby.EventToolCall:
			fmt.Fprintf(stderr, "%s→ %s %s\n", indent(path), inner.ToolCall.Name, inner.ToolCall.Arguments)
		case inner.Kind == robby.EventToolResult:
			r := inner.ToolResult
			fmt.Fprintf(stderr, "%s← %s (%v): %s\n", indent(path), r.Call.Name, r.Duration.Round(1e6), oneLine(r.Output, 200))
		}
	}
	return nil
}

// printAnswer prints a typed run's answer as one line of JSON, or returns
// its error, with the last answer if it did not fit.
func printAnswer(stdout io.Writer, answer json.RawMessage, err error) error {
	var answerErr *robby.AnswerError
	if errors.As(err, &answerErr) {
		return fmt.Errorf("%w\nthe last answer: %s", err, oneLine(answerErr.Raw, 500))
	}
	if err != nil {
		return err
	}
	var line bytes.Buffer
	if err := json.Compact(&line, answer); err != nil {
		return err
	}
	line.WriteByte('\n')
	_, err = stdout.Write(line.Bytes())
	return err
}

// indent shows how deep in agents used as tools a step is.
func indent(path []robby.ToolCall) string {
	var b strings.Builder
	for _, c := range path {
		b.WriteString(c.Name + " ")
	}
	return b.String()
}
