package state

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// A last-good temp whose rename was lost (a crash, a power cut) is removed when the store is
// first used; the copies stay.
func TestLastGoodDropsLostTemps(t *testing.T) {
	ownTemp := func(base string) bool { ok, _ := path.Match(".*.sessionmedic-*.tmp", base); return ok }
	root := t.TempDir()
	lg := NewLastGood(root, 0, fsio.FS{}, ownTemp)
	if err := lg.Put("/srv/a.jsonl", []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(root, ".~0123456789abcdef0123456789abcdef.sessionmedic-0a1b2c3d4e5f.tmp")
	if err := os.WriteFile(stray, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	again := NewLastGood(root, 0, fsio.FS{}, ownTemp)
	if got := again.Get("/srv/a.jsonl"); string(got) != "{}\n" {
		t.Fatalf("the copy: %q", got)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("the lost temp is still there: %v", err)
	}
}

// TestLastGoodFollowsTheRootsRealPath: the copy of a file below a symlinked root is the copy
// of the real file it reached. When the tree's user retargets the root at another user's
// tree, the reload that resolves it again never hands one tree's copies to the other.
func TestLastGoodFollowsTheRootsRealPath(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	os.Mkdir(a, 0o755)
	os.Mkdir(b, 0o755)
	root := filepath.Join(base, "root")
	os.Symlink(a, root)
	fsio.Confine(root)
	lg := NewLastGood(filepath.Join(base, "last-good"), 0, fsio.FS{}, nil)
	p := filepath.Join(root, "s.jsonl")
	if err := lg.Put(p, []byte("{\"tree\":\"a\"}\n")); err != nil {
		t.Fatal(err)
	}
	if got := lg.Get(p); string(got) != "{\"tree\":\"a\"}\n" {
		t.Fatalf("copy: %q", got)
	}
	os.Remove(root)
	os.Symlink(b, root)
	fsio.Confine(root) // the policy is reloaded
	if got := lg.Load(p); got != nil {
		t.Fatalf("tree b's file got tree a's copy: %q", got)
	}
	if got := NewLastGood(filepath.Join(base, "last-good"), 0, fsio.FS{}, nil).Get(p); got != nil {
		t.Fatalf("a new store handed tree b's file tree a's copy: %q", got)
	}
}

// TestLastGoodPutFrom: a copy streamed from a file is the file's bytes, kept like Put's (Get
// reads it, an identical copy is not written again), and one whose file moved while it was
// copied is never put in place: the older copy stays. With the bytes' sum known (a heal's
// result) they are copied by the kernel and keyed by that sum, to the same effect.
func TestLastGoodPutFrom(t *testing.T) {
	for _, known := range []bool{false, true} {
		t.Run(fmt.Sprint("known=", known), func(t *testing.T) { testLastGoodPutFrom(t, known) })
	}
}

func testLastGoodPutFrom(t *testing.T, known bool) {
	root := t.TempDir()
	lg := NewLastGood(filepath.Join(root, "lg"), 0, fsio.FS{}, nil)
	src := filepath.Join(root, "s.jsonl")
	v1, v2 := []byte("{\"a\":1}\n"), []byte("{\"a\":1}\n{\"b\":2}\n")
	put := func(data []byte, unchanged bool) {
		t.Helper()
		if err := os.WriteFile(src, data, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		sum := ""
		if known {
			s := sha256.Sum256(data)
			sum = hex.EncodeToString(s[:])
		}
		if err := lg.PutFrom("/srv/s.jsonl", f, int64(len(data)), sum, func() bool { return unchanged }); err != nil {
			t.Fatal(err)
		}
	}
	put(v1, true)
	if got := lg.Get("/srv/s.jsonl"); string(got) != string(v1) {
		t.Fatalf("copy %q, want %q", got, v1)
	}
	copyPath := filepath.Join(root, "lg", CopyName("/srv/s.jsonl"))
	before, _ := os.Stat(copyPath)
	put(v1, true)
	if after, _ := os.Stat(copyPath); !os.SameFile(before, after) {
		t.Error("an identical copy was written again")
	}
	// A store opened afresh (a restart) does not know the copy's bytes: it compares them,
	// and writes nothing when they are the file's.
	lg = NewLastGood(filepath.Join(root, "lg"), 0, fsio.FS{}, nil)
	put(v1, true)
	if after, _ := os.Stat(copyPath); !os.SameFile(before, after) {
		t.Error("after a restart, an identical copy was written again")
	}
	put(v2, false)
	if got := lg.Get("/srv/s.jsonl"); string(got) != string(v1) {
		t.Fatalf("a copy of a file that moved replaced the older one: %q", got)
	}
	put(v2, true)
	if got := lg.Get("/srv/s.jsonl"); string(got) != string(v2) {
		t.Fatalf("copy %q, want %q", got, v2)
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "lg")); len(ents) != 1 {
		t.Fatalf("%d entries in the store, want the copy alone (no temp left)", len(ents))
	}
}
