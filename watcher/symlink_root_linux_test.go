package watcher

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRealSymlinkedRoot: a root that is a symlink (/srv/app -> /data/app) is followed once,
// at the root: its tree is watched, files are reported under the root's own path, and a
// symlink below the root is never followed.
func TestRealSymlinkedRoot(t *testing.T) {
	tmp := t.TempDir()
	data := filepath.Join(tmp, "data", "app")
	mkdirAll(t, filepath.Join(data, "sessions", "console"))
	elsewhere := filepath.Join(tmp, "elsewhere")
	mkdirAll(t, filepath.Join(elsewhere, "deep"))
	if err := os.Symlink(elsewhere, filepath.Join(data, "sessions", "inner")); err != nil {
		t.Fatal(err)
	}
	mkdirAll(t, filepath.Join(tmp, "srv"))
	root := filepath.Join(tmp, "srv", "app")
	if err := os.Symlink(data, root); err != nil {
		t.Fatal(err)
	}

	h := realRun(t, Options{Roots: []string{root}})
	defer h.stop()
	// root, sessions, sessions/console: the inner symlink and what it points to are not.
	if n := h.w.Dirs(); n != 3 {
		t.Fatalf("Dirs() = %d after Ready, want 3", n)
	}

	top := filepath.Join(root, "top.json")
	deep := filepath.Join(root, "sessions", "console", "a.json")
	writeFile(t, filepath.Join(data, "top.json"), "{}")
	writeFile(t, filepath.Join(data, "sessions", "console", "a.json"), "{}")
	h.waitPaths(top, deep)

	// A directory created later below the symlinked root is watched and walked as well.
	later := filepath.Join(root, "sessions", "discord", "b.json")
	writeFile(t, filepath.Join(data, "sessions", "discord", "b.json"), "{}")
	h.waitPaths(later)
	wantDirs(t, h, 4)
}
