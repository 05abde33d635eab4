// Package layering checks which packages of this module a package imports, so that the
// picture of DESIGN.md §2 (dependencies point down; watcher and policy import nothing of
// ours but leaf packages) stays true. Each package's own TestImports calls [Check].
//
// Every non-test .go file is read whatever its build constraints, so a _linux.go or a
// _darwin.go file is held to the same rule as the rest.
package layering

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Module is the import path prefix of this module's packages.
const Module = "github.com/sessionmedic/sessionmedic/"

// Leaf reports whether own (a package path within the module) is one of the internal leaf
// packages, which import nothing of ours and so may be imported by any package.
func Leaf(own string) bool { return strings.HasPrefix(own, "internal/") }

// Check reads the non-test Go files of dir (and, with tree, of every directory below it but
// testdata and hidden ones) and reports through t each import of a package of this module
// whose path within the module (e.g. "policy", "heal/jsonv") allowed rejects.
func Check(t testing.TB, dir string, tree bool, allowed func(own string) bool) {
	t.Helper()
	fset := token.NewFileSet()
	n := 0
	err := filepath.WalkDir(dir, func(f string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if f != dir && (!tree || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") {
			return nil
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		n++
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if own, ours := strings.CutPrefix(path, Module); ours && !allowed(own) {
				t.Errorf("%s imports %s", f, path)
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
