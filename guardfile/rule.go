package guardfile

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"go.yaml.in/yaml/v3"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/envvar"
	"github.com/robby-go/robby/internal/guardrail"
	"github.com/robby-go/robby/internal/redact"
)

// A rule is one guard as the file gives it, with the line of each field.
type rule struct {
	Name, On, Tool, Match, Action, Replacement, Message string
	Judge, Model, BlockIf, AllowIf, BaseURL, APIKey     string
	Timeout                                             string
	MaxMatch                                            int
	Paragraphs, Beside                                  bool

	line  int            // the guard's
	lines map[string]int // each field's
}

// fields maps each field of the format to where rule keeps it.
func (r *rule) fields() map[string]any {
	return map[string]any{
		"name": &r.Name, "on": &r.On, "tool": &r.Tool, "match": &r.Match, "action": &r.Action,
		"replacement": &r.Replacement, "message": &r.Message, "judge": &r.Judge, "model": &r.Model,
		"block_if": &r.BlockIf, "allow_if": &r.AllowIf, "base_url": &r.BaseURL, "api_key": &r.APIKey,
		"timeout": &r.Timeout, "max_match": &r.MaxMatch, "paragraphs": &r.Paragraphs, "beside": &r.Beside,
	}
}

// readRule reads the guard of node n, an object.
func readRule(n *yaml.Node) (*rule, error) {
	r := &rule{line: n.Line, lines: map[string]int{}}
	if n.Kind != yaml.MappingNode {
		return r, r.errorf("", "a guard must be an object")
	}
	fields := r.fields()
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		dst, ok := fields[k.Value]
		switch {
		case !ok:
			return r, &Error{Line: k.Line, Field: k.Value, Err: errors.New("not a field of a guard")}
		case r.lines[k.Value] != 0:
			return r, &Error{Line: k.Line, Field: k.Value, Err: fmt.Errorf("given twice (first at line %d)", r.lines[k.Value])}
		}
		r.lines[k.Value] = k.Line
		// The value is not quoted: it may be a key.
		if err := v.Decode(dst); err != nil || v.Kind != yaml.ScalarNode {
			return r, r.errorf(k.Value, "want %s", kind(dst))
		}
	}
	return r, nil
}

// kind says what a field holds, for errors.
func kind(p any) string {
	switch p.(type) {
	case *int:
		return "a number"
	case *bool:
		return "true or false"
	}
	return "a string"
}

// errorf returns an error at the field's line, or the guard's.
func (r *rule) errorf(field, format string, args ...any) error {
	line := r.lines[field]
	if line == 0 {
		line = r.line
	}
	return &Error{Line: line, Field: field, Err: fmt.Errorf(format, args...)}
}

var boundaries = map[string]robby.Boundary{"input": robby.GuardInput, "tool_call": robby.GuardToolCall,
	"tool_result": robby.GuardToolResult, "output": robby.GuardOutput}

// guard returns the guard r describes, or what is wrong with it.
func (r *rule) guard() (robby.Guard, error) {
	g := robby.Guard{Name: r.Name, Tool: r.Tool, Message: r.Message, Paragraphs: r.Paragraphs, Beside: r.Beside}
	var ok bool
	if g.On, ok = boundaries[r.On]; !ok {
		return g, r.errorf("on", "give input, tool_call, tool_result or output, not %q", r.On)
	}
	if r.Tool != "" && g.On != robby.GuardToolCall && g.On != robby.GuardToolResult {
		return g, r.errorf("tool", "only a tool_call or tool_result guard names tools")
	}
	if err := r.timeout(&g); err != nil {
		return g, err
	}
	if g.Beside && g.On != robby.GuardInput {
		return g, r.errorf("beside", "only an input guard runs beside the model's request")
	}
	switch {
	case r.Match != "" && r.Judge != "":
		return g, r.errorf("judge", "give match or judge, not both")
	case r.Match != "":
		return g, r.pattern(&g)
	case r.Judge != "":
		return g, r.judge(&g)
	}
	return g, r.errorf("", `give "match" (a pattern) or "judge" (a rubric)`)
}

func (r *rule) timeout(g *robby.Guard) error {
	if r.Timeout == "" {
		return nil
	}
	d, err := time.ParseDuration(r.Timeout)
	if err != nil || d <= 0 {
		return r.errorf("timeout", "want a duration such as \"10s\", not %q", r.Timeout)
	}
	g.Timeout = d
	return nil
}

// pattern makes g a pattern guard.
func (r *rule) pattern(g *robby.Guard) error {
	for _, f := range []string{"model", "block_if", "allow_if", "base_url", "api_key", "timeout"} {
		if r.lines[f] != 0 {
			return r.errorf(f, "is a judge's field: this guard is a pattern (match)")
		}
	}
	re, err := regexp.Compile(r.Match)
	if err != nil {
		return r.errorf("match", "%v", err)
	}
	g.Pattern, g.Replacement, g.MaxMatch = re, r.Replacement, r.MaxMatch
	switch r.Action {
	case "block":
		g.Action = robby.Block
	case "redact":
		g.Action = robby.Redact
	default:
		return r.errorf("action", "give block or redact, not %q", r.Action)
	}
	switch {
	case r.Replacement != "" && g.Action != robby.Redact:
		return r.errorf("replacement", "only a redaction replaces")
	case r.MaxMatch < 0:
		return r.errorf("max_match", "%d is not a number of bytes", r.MaxMatch)
	case g.Beside && g.Action != robby.Block:
		return r.errorf("beside", "a redaction must come before the model reads the text: only a guard that blocks runs beside")
	case g.On == robby.GuardOutput && guardrail.AnchorsStart(re):
		return r.errorf("match", `an output pattern may not anchor at the text's start (\A, or ^ outside (?m)): a stream has none`)
	}
	if _, err := guardrail.Window(re, max(r.MaxMatch, 1024)); err != nil {
		return r.errorf("match", "%v", err)
	}
	return nil
}

// judge makes g an LLM judge.
func (r *rule) judge(g *robby.Guard) error {
	for _, f := range []string{"action", "replacement", "max_match"} {
		if r.lines[f] != 0 {
			return r.errorf(f, "is a pattern's field: this guard is a judge (a judge blocks)")
		}
	}
	switch {
	case r.BlockIf == "":
		return r.errorf("block_if", "a judge needs the answer that blocks, such as \"no\"")
	case r.AllowIf == "" && guardrail.Opposite(r.BlockIf) == "":
		return r.errorf("allow_if", "a judge that blocks on %q needs the answer that allows", r.BlockIf)
	case r.AllowIf != "" && r.AllowIf == r.BlockIf:
		return r.errorf("allow_if", "is block_if's answer too")
	case r.APIKey != "" && r.BaseURL == "":
		return r.errorf("api_key", "is the key of base_url's endpoint: give base_url too")
	}
	g.Judge = &robby.Judge{Rubric: r.Judge, Model: r.Model, BlockIf: r.BlockIf, AllowIf: r.AllowIf}
	if r.BaseURL == "" {
		return nil
	}
	client, err := r.client()
	g.Judge.Client = client
	return err
}

// client returns the client of the judge's own endpoint. Its errors never
// hold the values of the variables expanded: the key, a token in the URL.
func (r *rule) client() (*openai.Client, error) {
	var secrets []string
	base, err := envvar.Expand(r.BaseURL, &secrets)
	if err != nil {
		return nil, r.errorf("base_url", "%v", err)
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, r.errorf("base_url", "not an http:// or https:// URL with a host")
	}
	key, err := envvar.Expand(r.APIKey, &secrets)
	if err != nil {
		return nil, r.errorf("api_key", "%v", err)
	}
	var forms []string
	for _, s := range append(secrets, key) {
		forms = append(forms, redact.Forms(s)...)
	}
	c := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(key), option.WithMiddleware(redacting(forms)))
	return &c, nil
}

// redacting returns a middleware that takes secrets out of the errors of
// the requests it sees, such as a dial error quoting the URL. A judge's
// failure is its reason for blocking, which errors and logs show.
func redacting(secrets []string) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(req)
		return resp, redact.Error(err, secrets)
	}
}
