package fsio

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// LinkAway links only the version read, of one name, of the tree's owner, and never what a
// symlink at its name points to; on another file system it refuses (the caller copies).
func TestLinkAway(t *testing.T) {
	tree, state := t.TempDir(), t.TempDir()
	p := filepath.Join(tree, "s.jsonl")
	os.WriteFile(p, []byte("{}\n"), 0o600)
	id, err := StatIdentity(p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := FS{}.OpenParent(tree, p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	refused := func(what, dst string, want Identity) {
		t.Helper()
		if f, _, err := d.LinkAway("s.jsonl", dst, want); !errors.Is(err, ErrNotLinked) {
			if f != nil {
				f.Close()
			}
			t.Fatalf("%s: linked (%v)", what, err)
		}
		if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: %s left behind", what, dst)
		}
	}
	changed := id
	changed.Size++
	refused("another version", filepath.Join(state, "a"), changed)
	os.Link(p, filepath.Join(tree, "other"))
	refused("a second name", filepath.Join(state, "b"), id)
	os.Remove(filepath.Join(tree, "other"))
	id, _ = StatIdentity(p) // the link and unlink changed its ctime
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if shm, err := os.MkdirTemp("/dev/shm", "linkaway"); err == nil {
			defer os.RemoveAll(shm)
			if st, _ := StatIdentity(shm); st.Dev != id.Dev {
				refused("another file system", filepath.Join(shm, "c"), id)
			}
		}
	}
	f, got, err := d.LinkAway("s.jsonl", filepath.Join(state, "d"), id)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "{}\n" || got.Ino != id.Ino || got.Nlink != 2 {
		t.Fatalf("linked %q, %+v", b, got)
	}
	// A symlink at the name (to the very file) is never linked through.
	os.Remove(filepath.Join(state, "d"))
	os.Rename(p, filepath.Join(tree, "real"))
	os.Symlink(filepath.Join(tree, "real"), p)
	id, _ = StatIdentity(filepath.Join(tree, "real"))
	refused("a symlink", filepath.Join(state, "e"), id)
}
