package fsio

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports keeps the layering of DESIGN.md §2: heal/fsio imports no other package of ours
// but the internal leaf packages, which import none themselves.
// Every file is read whatever its build constraints, so a _linux.go file is held to it too.
func TestImports(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		n++
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "github.com/sessionmedic/") && !strings.HasPrefix(path, "github.com/sessionmedic/sessionmedic/internal/") {
				t.Errorf("%s imports %s", f, path)
			}
		}
	}
	if n == 0 {
		t.Fatal("no Go files found")
	}
}
