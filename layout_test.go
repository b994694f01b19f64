package robby_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestInternalFloorReachesNothingAbove holds the layout of
// docs/ARCHITECTURE.md: the packages under internal/ are the floor of
// mechanics under the agent, so none of them imports the root package or
// a package above the root. Their tests may.
func TestInternalFloorReachesNothingAbove(t *testing.T) {
	const module = "github.com/robby-go/robby"
	fset := token.NewFileSet()
	err := filepath.WalkDir("internal", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if above(strings.TrimPrefix(p, module), p) {
				t.Errorf("%s imports %s: the internal floor reaches up", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// above reports whether the import path p, rel being its path inside the
// module, is a robby package above the floor: any but internal/...,
// robbytest and mcpoauth, which stand on the floor too.
func above(rel, p string) bool {
	if rel == p {
		return false // another module's package
	}
	rel = strings.TrimPrefix(rel, "/")
	return rel == "" || !strings.HasPrefix(rel, "internal/") && rel != "robbytest" && rel != "mcpoauth"
}

// TestWrapsAddNoPrefix holds the rule of errors in the root, its stores
// and the floor under them: a package's prefix ("robby: ", "sqlitestore: ")
// begins an error where the package makes it, and a wrap adds only what was
// being done. So fmt.Errorf("robby: …%w", err) is refused: an error that
// crossed a store and the loop would name robby at each level.
func TestWrapsAddNoPrefix(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"sqlitestore", "pgstore", "internal"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		prefixes := []string{"robby: ", f.Name.Name + ": "}
		ast.Inspect(f, func(n ast.Node) bool {
			if format, ok := errorfFormat(n); ok && strings.Contains(format, "%w") {
				for _, p := range prefixes {
					if strings.HasPrefix(format, p) {
						t.Errorf("%s: %q wraps with a package's prefix: a wrap adds only the operation", fset.Position(n.Pos()), format)
					}
				}
			}
			return true
		})
	}
}

// errorfFormat returns the format of a call of fmt.Errorf with a literal
// format.
func errorfFormat(n ast.Node) (string, bool) {
	call, ok := n.(*ast.CallExpr)
	if !ok || len(call.Args) == 0 {
		return "", false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Errorf" {
		return "", false
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "fmt" {
		return "", false
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	format, err := strconv.Unquote(lit.Value)
	return format, err == nil
}

// TestRootFunctionsTakeFewParameters holds the root's functions to what
// they need: no unexported function or method takes six parameters or
// more, its receiver not counted. State that travels together, as a
// turn's does, goes in a value (turn.go).
func TestRootFunctionsTakeFewParameters(t *testing.T) {
	const limit = 6
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Name.IsExported() {
				continue
			}
			if n := fn.Type.Params.NumFields(); n >= limit {
				t.Errorf("%s: %s takes %d parameters: at most %d", fset.Position(fn.Pos()), fn.Name.Name, n, limit-1)
			}
		}
	}
}
