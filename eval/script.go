package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

// A Scripted is a model that plays the cases of a dataset from the scripts in
// their metadata ("script"), in process. A dataset so runs offline, to try its
// checks, reports and CI before a real model takes over. (robby eval does so
// without an endpoint.) A script is a list of runs: run i of a case follows
// script[i % len]. A run is its turns' replies. Each is a text, or a tool call
// {"call": NAME, "arguments": {...}, "result": TEXT}. The scripted tool NAME
// gives the call's result:
//
//	"metadata": {"script": [[{"call": "lookup", "arguments": {"country": "Norway"}, "result": "Oslo"}, "Oslo."], ["Bergen."]]}
//
// Its judge passes an answer that holds the case's expected answer. A Scripted
// is safe for concurrent use.
type Scripted struct {
	// Model and Judge are the endpoints of the model and of the judge.
	Model, Judge *robbytest.Server

	cases   map[string][][]scriptReply // by the case's first user message
	results map[string]string          // tool name + arguments → result

	mu   sync.Mutex
	runs map[string]int // the runs of each case started so far
}

// A scriptReply is one turn of a script.
type scriptReply struct {
	Text      string          `json:"-"`
	Call      string          `json:"call"`
	Arguments json.RawMessage `json:"arguments"`
	Result    string          `json:"result"`
}

// UnmarshalJSON reads a text, or a tool call with its result.
func (r *scriptReply) UnmarshalJSON(b []byte) error {
	if json.Unmarshal(b, &r.Text) == nil {
		return nil
	}
	type plain scriptReply
	if err := json.Unmarshal(b, (*plain)(r)); err != nil || r.Call == "" {
		return errors.New(`a reply is a text or {"call": NAME, "arguments": {...}, "result": TEXT}`)
	}
	return nil
}

// NewScripted starts the scripted model of d's scripts; nil when no case
// has one. Close it when done.
func NewScripted(d Dataset) (*Scripted, error) {
	s := &Scripted{cases: map[string][][]scriptReply{}, results: map[string]string{}, runs: map[string]int{}}
	for _, c := range d.Cases {
		raw, ok := c.Metadata["script"]
		if !ok {
			continue
		}
		var runs [][]scriptReply
		if err := remarshal(raw, &runs); err != nil || len(runs) == 0 {
			return nil, fmt.Errorf("eval: case %q: bad script: give a list of runs, each a list of replies: %v", c.Name, err)
		}
		key := firstUser(c)
		if _, dup := s.cases[key]; dup {
			return nil, fmt.Errorf("eval: case %q: another scripted case starts with the same message", c.Name)
		}
		s.cases[key] = runs
		for _, run := range runs {
			for _, r := range run {
				if r.Call != "" {
					s.results[r.Call+string(compact(r.Arguments))] = r.Result
				}
			}
		}
	}
	if len(s.cases) == 0 {
		return nil, nil
	}
	s.Model, s.Judge = robbytest.NewServer(), robbytest.NewServer()
	s.Model.Fallback(robbytest.Func(s.reply))
	s.Judge.Fallback(robbytest.Func(judgeReply))
	return s, nil
}

// LoadScripted is [NewScripted] of the dataset in a file, judge checks and all.
// Start it before the agents that talk to it. It returns nil when no case has a
// script.
func LoadScripted(path string) (*Scripted, error) {
	// The judge checks need an agent to load; this one is never asked.
	unasked, err := robby.New(robby.WithModel("unasked"), robby.WithBaseURL("http://127.0.0.1:1"))
	if err != nil {
		return nil, err
	}
	defer unasked.Close()
	d, err := Load(path, unasked)
	if err != nil {
		return nil, err
	}
	return NewScripted(d)
}

// Close stops both servers.
func (s *Scripted) Close() {
	s.Model.Close()
	s.Judge.Close()
}

// Tools are the scripted tools: each gives the result its script says for
// the arguments it gets.
func (s *Scripted) Tools() []robby.Tool {
	var names []string
	for key := range s.results {
		name, _, _ := strings.Cut(key, "{")
		names = append(names, name)
	}
	slices.Sort(names)
	var tools []robby.Tool
	for _, name := range slices.Compact(names) {
		tools = append(tools, robby.FuncTool(name, "A scripted tool", map[string]any{"type": "object"},
			func(_ context.Context, args map[string]any) (any, error) {
				b, _ := json.Marshal(args)
				if r, ok := s.results[name+string(b)]; ok {
					return r, nil
				}
				return nil, fmt.Errorf("no scripted result for %s(%s)", name, b)
			}))
	}
	return tools
}

// reply answers a request with the next turn of its case's script. The first
// turn of a run takes the case's next script. Later turns find theirs from the
// ids of the tool calls they answer (call_R_T_I).
func (s *Scripted) reply(req robbytest.Request) robbytest.Reply {
	key := ""
	for _, m := range req.Messages {
		if m.Role == "user" {
			key = m.Content
			break
		}
	}
	runs, ok := s.cases[key]
	if !ok {
		return robbytest.Text("This case has no script.")
	}
	run, turn := 0, 0
	if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
		fmt.Sscanf(last.ToolCallID, "call_%d_%d_", &run, &turn)
		turn++
	} else {
		s.mu.Lock()
		run = s.runs[key]
		s.runs[key]++
		s.mu.Unlock()
	}
	script := runs[run%len(runs)]
	if turn >= len(script) {
		return robbytest.Text("The script has ended.")
	}
	r := script[turn]
	usage := func(rep robbytest.Reply) robbytest.Reply { return rep.WithUsage(req.Tokens, len(r.Text)/4+8) }
	if r.Call == "" {
		return usage(robbytest.Text(r.Text))
	}
	call := robbytest.Call(r.Call, string(compact(r.Arguments)))
	call.ID = fmt.Sprintf("call_%d_%d_0", run, turn)
	return usage(robbytest.ToolCalls(call))
}

// judgeReply is the scripted judge: it passes an answer that holds the
// expected one (any answer, when none is expected).
func judgeReply(req robbytest.Request) robbytest.Reply {
	var in map[string]string
	for _, m := range req.Messages {
		if m.Role == "user" {
			json.Unmarshal([]byte(m.Content), &in)
		}
	}
	verdict := map[string]any{"pass": true, "score": 1, "reason": "the answer gives the expected one"}
	if !strings.Contains(strings.ToLower(in["answer"]), strings.ToLower(in["expected"])) {
		verdict = map[string]any{"pass": false, "score": 0, "reason": "the answer does not give " + in["expected"]}
	}
	v, _ := json.Marshal(verdict)
	return robbytest.Answer(string(v)).WithUsage(req.Tokens, 20)
}

// firstUser is the first user message of a case: its first message's
// text, or its input.
func firstUser(c Case) string {
	for _, m := range c.Messages {
		if m.OfUser != nil {
			return m.OfUser.Content.OfString.Value
		}
	}
	return c.Input
}

func remarshal(v any, into any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

// compact is JSON without spaces, as encoding/json writes it, so that
// arguments compare as text; {} for none.
func compact(raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return []byte("{}")
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	b, _ := json.Marshal(v)
	return b
}
