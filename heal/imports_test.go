package heal

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports keeps the layering of DESIGN.md §2: heal and every package under it import, of
// ours, only policy, heal's own sub-packages and internal leaf packages (never daemon, watcher
// or cmd). Every file is read whatever its build constraints, so a _linux.go file is held to
// the same rule.
func TestImports(t *testing.T) {
	const mod = "github.com/sessionmedic/sessionmedic/"
	fset := token.NewFileSet()
	n := 0
	err := filepath.WalkDir(".", func(f string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && f != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") {
			return nil
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		n++
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			own, ok := strings.CutPrefix(path, mod)
			if !ok {
				continue
			}
			if own != "policy" && own != "heal" && !strings.HasPrefix(own, "heal/") && !strings.HasPrefix(own, "internal/") {
				t.Errorf("%s imports %s", filepath.Join("heal", f), path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no Go files found")
	}
}
