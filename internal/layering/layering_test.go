package layering

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that keeps what Check reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Errorf(f string, a ...any) { r.errs = append(r.errs, f) }

func write(t *testing.T, p, src string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.go"), "package a\nimport _ \""+Module+"policy\"\n")
	write(t, filepath.Join(dir, "a_darwin.go"), "//go:build darwin\n\npackage a\nimport _ \""+Module+"daemon\"\n")
	write(t, filepath.Join(dir, "a_test.go"), "package a\nimport _ \""+Module+"cmd\"\n")
	write(t, filepath.Join(dir, "sub", "b.go"), "package b\nimport _ \""+Module+"watcher\"\n")
	write(t, filepath.Join(dir, "testdata", "c.go"), "package c\nimport _ \""+Module+"watcher\"\n")
	onlyPolicy := func(own string) bool { return own == "policy" || Leaf(own) }

	r := &recorder{TB: t}
	Check(r, dir, false, onlyPolicy)
	if len(r.errs) != 1 { // a_darwin.go's daemon: build tags do not hide it; tests are free
		t.Fatalf("one directory: %d errors, want 1", len(r.errs))
	}
	r = &recorder{TB: t}
	Check(r, dir, true, onlyPolicy)
	if len(r.errs) != 2 { // and sub/b.go's watcher; testdata is not read
		t.Fatalf("tree: %d errors, want 2", len(r.errs))
	}
	if !Leaf("internal/pathx") || Leaf("heal") {
		t.Fatal("Leaf")
	}
}

// layering itself is a leaf: it imports nothing of ours.
func TestImports(t *testing.T) {
	Check(t, ".", false, func(string) bool { return false })
}
