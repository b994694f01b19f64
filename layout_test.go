package robby_test

import (
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
