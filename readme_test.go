package robby_test

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"
)

// samplePackages are the packages README's Go samples may use without
// saying so, by the name they are used with. A sample that is a whole
// program (it starts with "package") names its own imports.
var samplePackages = map[string]string{
	"context":      "context",
	"base64":       "encoding/base64",
	"fmt":          "fmt",
	"http":         "net/http",
	"log":          "log",
	"os":           "os",
	"filepath":     "path/filepath",
	"testing":      "testing",
	"openai":       "github.com/openai/openai-go/v3",
	"option":       "github.com/openai/openai-go/v3/option",
	"mcp":          "github.com/modelcontextprotocol/go-sdk/mcp",
	"robby":        "github.com/robby-go/robby",
	"agui":         "github.com/robby-go/robby/agui",
	"eval":         "github.com/robby-go/robby/eval",
	"knowledge":    "github.com/robby-go/robby/knowledge",
	"mcpconfig":    "github.com/robby-go/robby/mcpconfig",
	"mcpoauth":     "github.com/robby-go/robby/mcpoauth",
	"mcpserver":    "github.com/robby-go/robby/mcpserver",
	"openaiserver": "github.com/robby-go/robby/openaiserver",
	"pgstore":      "github.com/robby-go/robby/pgstore",
	"sqlitestore":  "github.com/robby-go/robby/sqlitestore",
	"uistream":     "github.com/robby-go/robby/uistream",
}

// A readmeSample is one Go block of README.md.
type readmeSample struct {
	line  int    // of its opening fence
	given string // declarations it takes for granted, from a "<!-- given: ... -->" line before it
	code  string
}

var givenComment = regexp.MustCompile(`^<!-- given: (.*) -->$`)

func readmeSamples(t *testing.T) []readmeSample {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var samples []readmeSample
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		if lines[i] != "```go" {
			continue
		}
		s := readmeSample{line: i + 1}
		if i > 0 {
			if m := givenComment.FindStringSubmatch(lines[i-1]); m != nil {
				s.given = m[1]
			}
		}
		var code []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			code = append(code, lines[i])
		}
		s.code = strings.Join(code, "\n") + "\n"
		samples = append(samples, s)
	}
	return samples
}

// program makes a sample a package main: a whole program as it is, a
// fragment as the body of a function that may return an error, after what
// it is given.
func (s readmeSample) program(t *testing.T) string {
	if strings.HasPrefix(s.code, "package ") {
		return s.code
	}
	body := "ctx := context.Background()\n_ = ctx\n"
	if s.given != "" {
		body += s.given + "\n"
		for _, name := range givenNames(s.given) {
			body += "_ = " + name + "\n"
		}
	}
	body += "{\n" + s.code + "}\n"
	if lines := strings.Split(strings.TrimSpace(s.code), "\n"); !strings.HasPrefix(lines[len(lines)-1], "return ") {
		body += "return nil\n"
	}
	var imports []string
	used := usedNames(t, body)
	for name, path := range samplePackages {
		if used[name] || name == "context" {
			imports = append(imports, fmt.Sprintf("%q", path))
		}
	}
	slices.Sort(imports)
	return "package main\n\nimport (\n" + strings.Join(imports, "\n") + "\n)\n\n" +
		"func main() { _ = sample() }\n\nfunc sample() error {\n" + body + "}\n"
}

// givenNames lists the variables a given line declares ("var a, b T; var c U").
func givenNames(given string) []string {
	var names []string
	for _, decl := range strings.Split(given, ";") {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(decl), "var "))
		for _, f := range fields {
			names = append(names, strings.TrimSuffix(f, ","))
			if !strings.HasSuffix(f, ",") {
				break
			}
		}
	}
	return names
}

// usedNames returns the names used as the left of a selector: the
// packages a fragment needs, among its variables.
func usedNames(t *testing.T, body string) map[string]bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\nfunc f() error {\n"+body+"}\n", 0)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, body)
	}
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	return used
}

// droppedErrors reports the places where a sample loses an error: an
// error assigned and not looked at by the next statement, or a call's last
// result assigned to _.
func droppedErrors(fset *token.FileSet, f *ast.File) []string {
	var found []string
	report := func(n ast.Node, why string) {
		found = append(found, fmt.Sprintf("line %d: %s", fset.Position(n.Pos()).Line, why))
	}
	ast.Inspect(f, func(n ast.Node) bool {
		block, ok := n.(*ast.BlockStmt)
		if !ok {
			return true
		}
		for i, stmt := range block.List {
			as, ok := stmt.(*ast.AssignStmt)
			if !ok {
				continue
			}
			if last, ok := as.Lhs[len(as.Lhs)-1].(*ast.Ident); ok && last.Name == "_" && len(as.Rhs) == 1 && len(as.Lhs) > 1 {
				if _, call := as.Rhs[0].(*ast.CallExpr); call {
					report(as, "the call's last result (its error) is assigned to _")
				}
			}
			if !assigns(as, "err") {
				continue
			}
			if i+1 == len(block.List) || !mentions(block.List[i+1], "err") {
				report(as, "err is assigned and the next statement does not look at it")
			}
		}
		return true
	})
	return found
}

func assigns(as *ast.AssignStmt, name string) bool {
	return slices.ContainsFunc(as.Lhs, func(e ast.Expr) bool {
		id, ok := e.(*ast.Ident)
		return ok && id.Name == name
	})
}

func mentions(n ast.Node, name string) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Name == name {
			found = true
		}
		return !found
	})
	return found
}

// TestREADMESamples holds README's Go samples to what a reader copies:
// each one builds against this module (go vet type-checks it and runs the
// usual checks) and looks at every error it gets. A fragment is built as
// the body of a function; a "<!-- given: var x T -->" line before its fence
// declares what it takes from the prose around it.
func TestREADMESamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every README sample with go vet")
	}
	samples := readmeSamples(t)
	if len(samples) < 5 {
		t.Fatalf("README has %d Go samples: the extraction is broken", len(samples))
	}
	// The samples are packages of the module, in a folder of its own that
	// the test removes (and git ignores, should the test be killed).
	dir, err := os.MkdirTemp("examples", "readme-samples-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var pkgs []string
	fset := token.NewFileSet()
	for _, s := range samples {
		src := s.program(t)
		f, err := parser.ParseFile(fset, fmt.Sprintf("README.md:%d", s.line), src, 0)
		if err != nil {
			t.Errorf("README.md:%d: the sample does not parse: %v", s.line, err)
			continue
		}
		for _, d := range droppedErrors(fset, f) {
			t.Errorf("README.md:%d: the sample drops an error (%s)", s.line, d)
		}
		pkg := filepath.Join(dir, fmt.Sprintf("line%04d", s.line))
		if err := os.Mkdir(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "main.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, "./"+filepath.ToSlash(pkg))
	}
	ctx := t.Context()
	if deadline, ok := t.Deadline(); ok {
		// Fail with what vet said rather than be killed by go test's timeout.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-30*time.Second))
		defer cancel()
	}
	args := append([]string{"vet"}, buildFlags()...)
	// go test puts its own go first on PATH.
	cmd := exec.CommandContext(ctx, "go", append(args, pkgs...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("go vet of README's samples: %v\n%s", err, out.String())
	}
}

// buildFlags are the flags this test binary was built with that change
// how packages compile. Vet builds the samples' imports with them, so it
// finds them in the build cache that built this test.
func buildFlags() []string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	var flags []string
	for _, s := range info.Settings {
		if s.Key == "-race" && s.Value == "true" {
			flags = append(flags, "-race")
		}
	}
	return flags
}

// TestREADMEListsEveryDoc keeps README's Documentation list complete and
// its links true: every docs/*.md is listed, and every link to a file of
// the repository names one that exists.
func TestREADMEListsEveryDoc(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	_, list, found := strings.Cut(readme, "\n## Documentation\n")
	if !found {
		t.Fatal("README has no Documentation section")
	}
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if !strings.Contains(list, "]("+d+")") {
			t.Errorf("README's Documentation list does not link %s", d)
		}
	}
	for _, m := range regexp.MustCompile(`\]\(([\w./-]+\.\w+|[\w.-]+/[\w./-]*)(#[^)]*)?\)`).FindAllStringSubmatch(readme, -1) {
		if _, err := os.Stat(m[1]); err != nil {
			t.Errorf("README links %s, which is not in the repository", m[1])
		}
	}
}
