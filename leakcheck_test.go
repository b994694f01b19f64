package robby

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// testFunc finds a test, example or fuzz target in a test file.
var testFunc = regexp.MustCompile(`(?m)^func (Test|Example|Fuzz)\w*\(`)

// TestEveryPackageChecksLeaks fails when a folder of the repository has
// tests but no goleak.VerifyTestMain: a goroutine its tests leave would go
// unseen.
func TestEveryPackageChecksLeaks(t *testing.T) {
	tested, checked := map[string]bool{}, map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		if strings.Contains(string(src), "goleak.VerifyTestMain(") {
			checked[dir] = true
		}
		if testFunc.Match(src) {
			tested[dir] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range tested {
		if !checked[dir] {
			t.Errorf("%s has tests but no TestMain with goleak.VerifyTestMain", dir)
		}
	}
}
