package watcher

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests use the real inotify source: short settle times and generous deadlines, no upper
// bound on time tighter than the harness's ten seconds.

func wantDirs(t *testing.T, h *harness, n int) {
	t.Helper()
	eventually(t, "Dirs() == "+strconv.Itoa(n), func() bool { return h.w.Dirs() == n })
}

func TestRealRecursiveWatches(t *testing.T) {
	root := t.TempDir()
	mkdirAll(t, filepath.Join(root, "a", "b"))
	h := realRun(t, Options{Roots: []string{root}})
	defer h.stop()
	if n := h.w.Dirs(); n != 3 {
		t.Fatalf("Dirs() = %d after Ready, want 3", n)
	}

	deep := filepath.Join(root, "a", "b", "deep.jsonl")
	top := filepath.Join(root, "top.json")
	writeFile(t, deep, "{}\n")
	writeFile(t, top, "{}")
	h.waitPaths(deep, top)
}

func TestRealNewDirectoriesAreWalked(t *testing.T) {
	root := t.TempDir()
	h := realRun(t, Options{Roots: []string{root}})
	defer h.stop()

	// mkdir -p, then files at once: most land before the nested watches exist.
	made := []string{
		filepath.Join(root, "x", "1.json"),
		filepath.Join(root, "x", "y", "2.json"),
		filepath.Join(root, "x", "y", "z", "3.json"),
	}
	mkdirAll(t, filepath.Join(root, "x", "y", "z"))
	for _, p := range made {
		writeFile(t, p, "{}")
	}

	// A tree prepared elsewhere and renamed in: no event for anything inside it.
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "p", "4.json"), "{}")
	writeFile(t, filepath.Join(outside, "p", "q", "5.json"), "{}")
	if err := os.Rename(filepath.Join(outside, "p"), filepath.Join(root, "p")); err != nil {
		t.Fatal(err)
	}
	moved := []string{filepath.Join(root, "p", "4.json"), filepath.Join(root, "p", "q", "5.json")}

	h.waitPaths(append(made, moved...)...)
	wantDirs(t, h, 6) // root, x, x/y, x/y/z, p, p/q

	// The new watches work: a later write deep inside is seen.
	later := filepath.Join(root, "p", "q", "later.json")
	writeFile(t, later, "{}")
	h.waitPaths(later)
}

func TestRealRemovedDirectoriesDropWatches(t *testing.T) {
	root := t.TempDir()
	mkdirAll(t, filepath.Join(root, "x", "y", "z"))
	mkdirAll(t, filepath.Join(root, "keep"))
	h := realRun(t, Options{Roots: []string{root}})
	defer h.stop()
	wantDirs(t, h, 5)

	if err := os.RemoveAll(filepath.Join(root, "x")); err != nil {
		t.Fatal(err)
	}
	wantDirs(t, h, 2)

	// Renamed away, out of the root: the watches go too.
	if err := os.Rename(filepath.Join(root, "keep"), filepath.Join(t.TempDir(), "keep")); err != nil {
		t.Fatal(err)
	}
	wantDirs(t, h, 1)
}

// A directory renamed inside the root is watched under its new name, subdirectories included.
func TestRealRenamedDirectoryKeepsWatching(t *testing.T) {
	root := t.TempDir()
	mkdirAll(t, filepath.Join(root, "old", "sub"))
	h := realRun(t, Options{Roots: []string{root}})
	defer h.stop()

	if err := os.Rename(filepath.Join(root, "old"), filepath.Join(root, "new")); err != nil {
		t.Fatal(err)
	}
	wantDirs(t, h, 3)
	f := filepath.Join(root, "new", "sub", "s.json")
	// The rename's own events may still be settling: write until the new path comes out.
	eventually(t, "an event for "+f, func() bool {
		writeFile(t, f, "{}")
		time.Sleep(100 * ms)
		return slices.Contains(h.paths(), f)
	})
	for _, p := range h.paths() {
		if strings.Contains(p, string(filepath.Separator)+"old"+string(filepath.Separator)) {
			t.Errorf("event under the old name: %s", p)
		}
	}
}

func TestRealRootCreatedLater(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "later", "deeper")
	h := realRun(t, Options{Roots: []string{root}})
	defer h.stop()
	if n := h.w.Dirs(); n != 1 {
		t.Fatalf("Dirs() = %d while the root is missing, want 1 (its nearest ancestor)", n)
	}

	f := filepath.Join(root, "sub", "f.json")
	g := filepath.Join(root, "g.json")
	writeFile(t, f, "{}") // creates later/deeper/sub in one go
	writeFile(t, g, "{}")
	h.waitPaths(f, g)
	wantDirs(t, h, 2) // root and sub; the ancestor's watch is gone

	// Removed: back to waiting; created again: picked up again.
	if err := os.RemoveAll(filepath.Join(base, "later")); err != nil {
		t.Fatal(err)
	}
	wantDirs(t, h, 1)
	again := filepath.Join(root, "again.json")
	writeFile(t, again, "{}")
	h.waitPaths(again)
	wantDirs(t, h, 1)
}

func TestRealChmodAndFilteredDeliverNothing(t *testing.T) {
	root := t.TempDir()
	f := filepath.Join(root, "a.json")
	writeFile(t, f, "{}")
	mkdirAll(t, filepath.Join(root, "skip"))
	filter := func(p string, isDir bool) bool {
		if isDir {
			return filepath.Base(p) != "skip"
		}
		return filepath.Ext(p) != ".tmp"
	}
	h := realRun(t, Options{Roots: []string{root}, Filter: filter})
	defer h.stop()
	if n := h.w.Dirs(); n != 1 {
		t.Fatalf("Dirs() = %d, want 1 (skip/ is filtered out)", n)
	}

	if err := os.Chmod(f, 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "a.json.tmp"), "{}")
	writeFile(t, filepath.Join(root, "skip", "b.json"), "{}")
	mkdirAll(t, filepath.Join(root, "skip2", "skip"))
	writeFile(t, filepath.Join(root, "skip2", "skip", "c.json"), "{}")

	barrier := filepath.Join(root, "barrier.json")
	writeFile(t, barrier, "{}")
	h.waitPaths(barrier)
	time.Sleep(300 * ms) // anything else would have settled by now
	if got := h.paths(); !slices.Equal(got, []string{barrier}) {
		t.Fatalf("events %q, want only the barrier", got)
	}
	wantDirs(t, h, 2) // root and skip2
}

// A missing root inside another root waits on a directory the outer root already watches: one
// watch serves both, and each reason to keep it is counted.
func TestRealNestedRoots(t *testing.T) {
	outer := t.TempDir()
	inner := filepath.Join(outer, "x", "y")
	h := realRun(t, Options{Roots: []string{outer, inner}})
	defer h.stop()
	if n := h.w.Dirs(); n != 1 {
		t.Fatalf("Dirs() = %d, want 1", n)
	}

	f := filepath.Join(inner, "f.json")
	writeFile(t, f, "{}")
	h.waitPaths(f)
	wantDirs(t, h, 3)

	if err := os.RemoveAll(filepath.Join(outer, "x")); err != nil {
		t.Fatal(err)
	}
	wantDirs(t, h, 1)
	g := filepath.Join(outer, "g.json")
	writeFile(t, g, "{}")
	h.waitPaths(g)

	again := filepath.Join(inner, "again.json")
	writeFile(t, again, "{}")
	h.waitPaths(again)
	wantDirs(t, h, 3)
}
